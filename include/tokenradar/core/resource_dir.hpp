#pragma once
// Finds the folders shipped beside the binary (profiles/, workloads/, web/dist/) so that
// `tokenradar sim --profile gpt-4o-like` works from the source tree, the build tree and an
// installed prefix alike.

#include <filesystem>
#include <string_view>

namespace tokenradar {

// The first existing directory among: $TOKENRADAR_HOME/<name>, ./<name>,
// <exe dir>/../../<name> (build/<preset>/tokenradar in the source tree),
// <exe dir>/../share/tokenradar/<name>. When none exists, ./<name> (later errors name it).
std::filesystem::path find_resource_dir(std::string_view name);

}  // namespace tokenradar

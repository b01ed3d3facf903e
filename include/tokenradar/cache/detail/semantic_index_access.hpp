#pragma once
// Tests only: reaches into a SemanticIndex to make its concurrency deterministic. Nothing
// else may include this header.

#include <tokenradar/cache/semantic_index.hpp>

#include <functional>
#include <memory>
#include <string_view>

namespace tokenradar::cache::detail {

struct SemanticIndexAccess {
    // Holds `scope`'s lock exclusively, as an insert or a rebuild's swap does, until the
    // returned handle is destroyed, which must happen on this thread; null when there is no
    // such scope. Never call the index's functions on this thread while holding it.
    static std::shared_ptr<void> hold_exclusive(SemanticIndex& index, std::string_view scope);

    // `hook` runs on every rebuild's thread once the new graph is built from the snapshot and
    // before the rebuild catches up and swaps it in; no lock is held, so it may call the index
    // (an insert or erase there is one "made while the rebuild ran"). Set it before any thread
    // uses the index.
    static void on_rebuild_built(SemanticIndex& index, std::function<void()> hook);
};

}  // namespace tokenradar::cache::detail

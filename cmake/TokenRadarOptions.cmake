# Compiler settings shared by every target: one INTERFACE target carries the warnings,
# sanitizer and fuzzing flags so no component repeats them.
option(TOKENRADAR_WERROR "Treat warnings as errors" OFF)
option(TOKENRADAR_FUZZ "Build libFuzzer targets (needs clang)" OFF)
# Sanitizer builds skip what they would not run: timing/slow tests and micro-benchmarks.
option(TOKENRADAR_TIMING_TESTS "Build the tests labelled timing and slow" ON)
option(TOKENRADAR_BENCHMARKS "Build the micro-benchmarks" ON)
set(TOKENRADAR_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list (e.g. address,undefined)")
# Profile-guided optimisation with GCC (make build-pgo): `generate` instruments the build to
# write profiles into TOKENRADAR_PGO_DIR when a process exits; `use` optimises with them.
# Profiles are named after object paths relative to the build tree, so the two trees match.
set(TOKENRADAR_PGO "" CACHE STRING "Profile-guided optimisation: empty, generate or use")
set(TOKENRADAR_PGO_DIR "${CMAKE_SOURCE_DIR}/build/pgo-profile" CACHE PATH
    "Where the profile-guided build writes and reads its profiles")

add_library(tokenradar_options INTERFACE)
add_library(tokenradar::options ALIAS tokenradar_options)
target_compile_features(tokenradar_options INTERFACE cxx_std_20)
target_compile_options(tokenradar_options INTERFACE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Woverloaded-virtual -Wimplicit-fallthrough
    $<$<BOOL:${TOKENRADAR_WERROR}>:-Werror>
    # GCC 12 misreads Asio's recycling allocator of coroutine frames as a new/delete mismatch.
    $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>)
# Boost.Asio and Beast are compiled once (src/net/asio_impl.cpp), not in every TU.
target_compile_definitions(tokenradar_options INTERFACE
    BOOST_ASIO_SEPARATE_COMPILATION BOOST_BEAST_SEPARATE_COMPILATION
    BOOST_ASIO_NO_DEPRECATED BOOST_ASIO_DISABLE_CONCEPTS
    SPDLOG_FMT_EXTERNAL)

if(TOKENRADAR_SANITIZE)
    target_compile_options(tokenradar_options INTERFACE
        -fsanitize=${TOKENRADAR_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(tokenradar_options INTERFACE -fsanitize=${TOKENRADAR_SANITIZE})
endif()
if(TOKENRADAR_PGO STREQUAL "generate")
    target_compile_options(tokenradar_options INTERFACE -fprofile-generate=${TOKENRADAR_PGO_DIR}
        -fprofile-update=atomic -fprofile-prefix-path=${CMAKE_BINARY_DIR})
    target_link_options(tokenradar_options INTERFACE -fprofile-generate=${TOKENRADAR_PGO_DIR})
elseif(TOKENRADAR_PGO STREQUAL "use")
    # Code the training run never reached is optimised as without a profile, not for size.
    target_compile_options(tokenradar_options INTERFACE -fprofile-use=${TOKENRADAR_PGO_DIR}
        -fprofile-partial-training -fprofile-prefix-path=${CMAKE_BINARY_DIR} -Wno-missing-profile)
elseif(TOKENRADAR_PGO)
    message(FATAL_ERROR "TOKENRADAR_PGO is '${TOKENRADAR_PGO}'; expected empty, generate or use")
endif()
if(TOKENRADAR_FUZZ)
    target_compile_options(tokenradar_options INTERFACE
        -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
    target_link_options(tokenradar_options INTERFACE -fsanitize=address,undefined)
endif()

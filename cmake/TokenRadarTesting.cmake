# tokenradar_add_test(NAME name SOURCES a.cpp b.cpp LIBS lib... [LABELS label] [PREFIX p])
# Labels: `timing` (needs the optimised build and a quiet machine: run serially, skipped
# under sanitizers), `slow` (long acceptance runs: serial, skipped under sanitizers).
# One GoogleTest executable; its tests are discovered so ctest reports each case. PREFIX
# (e.g. "sim.") is prepended to every case name so `ctest -R sim` selects a component.
function(tokenradar_add_test)
    cmake_parse_arguments(T "" "NAME;PREFIX" "SOURCES;LIBS;LABELS" ${ARGN})
    if(NOT TOKENRADAR_TIMING_TESTS AND (T_LABELS STREQUAL "timing" OR T_LABELS STREQUAL "slow"))
        return()
    endif()
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main
                          tokenradar::options)
    target_compile_definitions(${T_NAME} PRIVATE
        TOKENRADAR_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
        TOKENRADAR_BINARY="$<TARGET_FILE:tokenradar>")
    set(properties TIMEOUT 600)
    if(T_LABELS)
        # gtest_discover_tests cannot pass a list through PROPERTIES: one label per test.
        list(LENGTH T_LABELS label_count)
        if(label_count GREATER 1)
            message(FATAL_ERROR "${T_NAME}: give one label (timing, slow), not ${T_LABELS}")
        endif()
        list(APPEND properties LABELS ${T_LABELS})
        # Timing-sensitive and slow tests run alone so other tests do not steal their CPU.
        if(T_LABELS STREQUAL "timing" OR T_LABELS STREQUAL "slow")
            list(APPEND properties RUN_SERIAL TRUE)
        endif()
    endif()
    gtest_discover_tests(${T_NAME}
        TEST_PREFIX "${T_PREFIX}"
        DISCOVERY_TIMEOUT 60
        PROPERTIES ${properties}
        WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

# tokenradar_add_fuzzer(NAME name SOURCES fuzz.cpp LIBS lib...)
# Under TOKENRADAR_FUZZ a libFuzzer binary; otherwise the same entry point linked with a
# replay main that runs every input of tests/fuzz/corpus/<name>/ as an ordinary test.
function(tokenradar_add_fuzzer)
    cmake_parse_arguments(F "" "NAME" "SOURCES;LIBS" ${ARGN})
    set(target fuzz_${F_NAME})
    if(TOKENRADAR_FUZZ)
        add_executable(${target} ${F_SOURCES})
        target_link_options(${target} PRIVATE -fsanitize=fuzzer)
    else()
        add_executable(${target} ${F_SOURCES} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.cpp)
        add_test(NAME fuzz_replay.${F_NAME}
                 COMMAND ${target} ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${F_NAME})
        set_tests_properties(fuzz_replay.${F_NAME} PROPERTIES LABELS fuzz TIMEOUT 120)
    endif()
    target_link_libraries(${target} PRIVATE ${F_LIBS} tokenradar::options)
endfunction()

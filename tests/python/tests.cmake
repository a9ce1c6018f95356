# SPDX-License-Identifier: MIT
# Python: the package's pytest suite (python/tests) with the cached venv's
# pytest (scripts/pyvenv.sh). It builds the wheel once (pip wheel .), installs
# it into a fresh venv and runs every test against that install; traces go
# to ACT_TRACE_DIR for CI's validators. Without the venv it fails naming the
# command to run, or skips with ACT_NO_VENV=1. nosan: the wheel and torch are
# not built with the sanitizers.
# DocBlocks runs every ```sh and ```python block of README.md and docs/*.md
# (python/tests/test_doc_blocks.py) against this build and the same wheel;
# the two share the wheel's work folder, hence the lock.
add_test(NAME Python
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                 python/tests --ignore=python/tests/test_doc_blocks.py)
add_test(NAME DocBlocks
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/run.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}
                 python/tests/test_doc_blocks.py)
set_tests_properties(Python DocBlocks PROPERTIES LABELS "python;nosan" TIMEOUT 1200
  SKIP_RETURN_CODE 77 RESOURCE_LOCK actrace_pytest_work
  ENVIRONMENT "ACT_TRACE_DIR=${ACT_TRACE_DIR};ACT_PYTEST_WORK=${PROJECT_BINARY_DIR}/pytest;ACT_BUILD_DIR=${PROJECT_BINARY_DIR}")

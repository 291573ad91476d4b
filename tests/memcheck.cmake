# SPDX-License-Identifier: MIT
# Injected by `make memcheck` (CMAKE_PROJECT_INCLUDE) into a dev build without
# sanitizers, so that `ctest -T memcheck` runs the tests under valgrind and a
# leak or a memory error fails the test (valgrind's exit code 99). Fair
# scheduling: a thread waiting its turn for a lock must get to run.
set(MEMORYCHECK_COMMAND_OPTIONS
  "--fair-sched=yes --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes --num-callers=30"
  CACHE STRING "valgrind options for ctest -T memcheck" FORCE)
include(CTest)

// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile timeout=120 */
/*
 * test-hostile-raw-anon's table for the irq dispatcher's epoll and wake
 * eventfd, each cell in a child of its own. Not run under
 * ThreadSanitizer: the dispatcher thread may wait once on the number the
 * test's raw call gave to its other owner (the window until its next
 * check), and ThreadSanitizer, which never saw the raw close, reports
 * that use of the number as the race it is.
 */
#define RAW_ANON_DISP
#define GROUP "hostile-raw-disp"
#include "test-hostile-raw-anon.c"

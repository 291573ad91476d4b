// SPDX-License-Identifier: MIT
/* ctest-labels: unit hostile tsan white-box timeout=120 */
/*
 * Loops of waits through the waits of an interrupt line for its
 * dispatch, in the chains of test-hostile-wait-loops (wait-chain.h:
 * participant i waits in a callback of the library, with kind[i], for
 * participant i + 1's callback; in a loop the last for the first; in the
 * control the main thread makes the last wait, and nothing is refused).
 *
 * The participant waited for is the dispatcher in a line's primary
 * handler (the body), on a shared line whose handler was requested with
 * devm_request_irq():
 *
 * - request_irq() of a second handler on that line waits until no
 *   dispatch of the line runs. In a loop it requests nothing and returns
 *   -EDEADLK with one WARN; in the control it waits and requests.
 * - devm_free_irq() of the managed handler waits the same, and cannot
 *   refuse: in a loop it frees the handler without waiting, with one
 *   WARN, and the dispatcher reaps it once its handlers return; in the
 *   control it waits and frees.
 *
 * Each with every kind of wait-chain.h but irq_line_raise_wait() (a
 * raise from a primary handler is refused anywhere), both orders, each
 * in a child under an alarm: before these waits were recorded, every
 * cell where one of them closes the loop hung until its alarm, and so
 * did each control where the main thread makes it (the participant
 * before waits until the main thread's wait is on the record).
 *
 * And two unmask callbacks of one masked line on two threads: the one
 * that synchronizes the line waits for the other (not for itself), and
 * is refused only when the other waits for it.
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include "wait-chain.h"

/* Cells at once: they mostly sleep, waiting for each other's threads. */
#define WIDTH 8
#define MAXROWS (4 * NK_ALL)

static int rows_of[MAXROWS][2];
static char row_names[MAXROWS][64];
static const char *row_ptr[MAXROWS];
static int nrows;

static const char *const cols[2] = { "loop", "control" };

static void add_row(int a, int b)
{
	int n = nrows++;

	rows_of[n][0] = a;
	rows_of[n][1] = b;
	snprintf(row_names[n], sizeof(row_names[n]), "(%s, %s)", kind_name[a],
		 kind_name[b]);
	row_ptr[n] = row_names[n];
}

/* Every kind with @k, both orders. */
static void make_rows(int k)
{
	nrows = 0;
	for (int a = 0; a < NK_ALL; a++) {
		if (a == K_RAISE)
			continue;
		add_row(a, k);
		add_row(k, a);
	}
}

static int cell(int row, int col)
{
	return chain(rows_of[row], 2, col == 0);
}

static void request_pairs(void **state)
{
	(void)state;
	make_rows(K_REQUEST);
	run_cells_in_children_wide(cell, row_ptr, nrows, cols, 2, WIDTH);
}

static void devm_free_pairs(void **state)
{
	(void)state;
	make_rows(K_DEVMFREE);
	run_cells_in_children_wide(cell, row_ptr, nrows, cols, 2, WIDTH);
}

/*
 * Two unmask callbacks of one masked line: one on a managed thread (its
 * request_irq() of the line's first handler unmasks it), one on the
 * dispatcher (after an interrupt delivered while the first runs). The
 * first synchronizes the line, which waits for the second; the second,
 * once that wait is on the record, returns (the control) or stops the
 * managed thread (the loop: refused, -EDEADLK, one WARN). Before, the
 * first was refused as a wait for itself, one WARN in the control.
 */
static struct {
	struct device dev;
	struct devres_thread *h;
	int efd, irq, armed, n, loop;
	int in[2];
	uint64_t wid;
	long stop_ret;
} U;

static void um_unmask(void *ctx)
{
	int me;

	(void)ctx;
	if (!LOAD(U.armed))
		return;
	me = __atomic_fetch_add(&U.n, 1, __ATOMIC_ACQ_REL);
	if (me == 0) {
		U.wid = devres_wait_self();
		STORE(U.in[0], 1);
		while (!LOAD(U.in[1]))
			usleep(1000);
		synchronize_irq((unsigned int)U.irq);
		STORE(U.in[0], 2);
	} else if (me == 1) {
		while (!LOAD(U.in[0]))
			usleep(1000);
		STORE(U.in[1], 1);
		while (!devres__wait_records(U.wid) && LOAD(U.in[0]) != 2)
			usleep(1000);
		if (U.loop)
			U.stop_ret = devm_thread_stop(&U.dev, U.h);
	}
}

static int um_thread(void *arg)
{
	(void)arg;
	while (!LOAD(U.armed))
		usleep(1000);
	return request_irq((unsigned int)U.irq, nop_fn, 0, "um", &U) ? 1 : RET;
}

static int unmask_cell(bool loop)
{
	int w0;

	alarm(CELL_ALARM_S);
	U.loop = loop;
	device_initialize(&U.dev);
	U.dev.release = dev_release;
	if (dev_set_name(&U.dev, "um"))
		return 2;
	U.efd = eventfd(0, EFD_CLOEXEC);
	if (U.efd < 0)
		return 3;
	U.irq = irq_line_attach_masked(U.efd, um_unmask, NULL, "um");
	if (U.irq <= 0)
		return 4;
	U.h = devm_thread_run(&U.dev, um_thread, NULL, "um");
	if (IS_ERR(U.h))
		return 6;
	w0 = devres_warn_count();
	STORE(U.armed, 1);
	while (!LOAD(U.in[0]))
		usleep(1000);
	if (irq_line_raise(U.irq))
		return 5;
	while (LOAD(U.in[0]) != 2)
		usleep(1000);
	if (devres_warn_count() - w0 != (loop ? 1 : 0)) {
		fprintf(stderr, "unmask %s: %d WARNs\n", cols[!loop],
			devres_warn_count() - w0);
		return 7;
	}
	if (loop && U.stop_ret != -EDEADLK) {
		fprintf(stderr, "unmask loop: devm_thread_stop: %ld\n",
			U.stop_ret);
		return 8;
	}
	(void)free_irq((unsigned int)U.irq, &U);
	(void)devres_release_all(&U.dev);
	for (int n = 0; n < 2000 && irq_line_destroy(U.irq); n++)
		usleep(1000);
	close(U.efd);
	return 0;
}

static void unmask_two_threads(void **state)
{
	(void)state;
	for (int loop = 0; loop < 2; loop++) {
		int st = 0;
		pid_t pid;

		fflush(NULL);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(unmask_cell(loop));
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fprintf(stderr, "unmask %s: %s %d\n", cols[!loop],
				WIFSIGNALED(st) ? "killed by signal" : "exit",
				WIFSIGNALED(st) ? WTERMSIG(st)
						: WEXITSTATUS(st));
		assert_true(WIFEXITED(st) && !WEXITSTATUS(st));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_pairs),
		cmocka_unit_test(devm_free_pairs),
		cmocka_unit_test(unmask_two_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: MIT
/* ctest-labels: unit tsan */
/*
 * The program's signals stay the program's: every thread the library
 * starts on its own (the interrupt dispatcher, a threaded handler's
 * thread, a thread devres_thread_spawn() starts for the kernel-compat
 * work items) blocks every signal, whatever the mask of the thread that
 * made it start. A program that then blocks a signal in its own threads
 * and takes it from a signalfd or sigwaitinfo() gets it there: a library
 * thread that took it instead would run the program's handler in a
 * thread the program does not know, or end the process by the default
 * action. One cell per way a program sets its signals up (rows) and per
 * kind of library thread (columns), each in a child with an alarm; each
 * also checks that the thread goes on working under the setting (a line
 * raised once more is handled; a spawned thread ends when told).
 */
#define _GNU_SOURCE /* NOLINT(bugprone-reserved-identifier) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <devres/irq.h>
#include <devres/posix.h>
#include "testlib.h"
#include "hostile/cell-child.h"

#define ALARM_S 20
#define MAX_TASKS 64
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const rows[] = {
	"signalfd for SIGUSR1, SIGTERM, SIGINT",
	"SIGCHLD ignored",
	"SIGPIPE ignored",
	"every signal blocked, signalfd for all",
};

static const char *const cols[] = {
	"irq dispatcher",
	"threaded handler",
	"devres_thread_spawn",
};

/* The signals a program commonly takes for itself. */
static const int program_sigs[] = { SIGUSR1, SIGUSR2, SIGTERM, SIGINT,
				    SIGHUP,  SIGCHLD, SIGPIPE, SIGALRM };

static int list_tasks(int *tids)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) && n < MAX_TASKS) {
		if (e->d_name[0] != '.')
			tids[n++] = atoi(e->d_name);
	}
	closedir(d);
	return n;
}

static bool listed(const int *tids, int n, int tid)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* The blocked mask of task @tid, from its status; false if unreadable. */
static bool task_blocked(int tid, uint64_t *ret_mask)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SigBlk: %" SCNx64, ret_mask) == 1) {
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

/* 0 when every task not in @before blocks every program signal. */
static int check_new_tasks(const int *before, int nbefore)
{
	int now[MAX_TASKS], n = list_tasks(now), seen = 0;

	for (int i = 0; i < n; i++) {
		uint64_t blk;

		if (listed(before, nbefore, now[i]))
			continue;
		if (!task_blocked(now[i], &blk))
			continue; /* ended meanwhile */
		seen++;
		for (size_t s = 0; s < ARRAY_SIZE(program_sigs); s++) {
			if (blk & (UINT64_C(1) << (program_sigs[s] - 1)))
				continue;
			fprintf(stderr,
				"library thread %d takes %s (%" PRIx64 ")\n",
				now[i], strsignal(program_sigs[s]), blk);
			return 10;
		}
	}
	return seen ? 0 : 11;
}

static int handled; /* __atomic */
static sem_t spawn_go, spawn_started;

static irqreturn_t primary(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
	return IRQ_HANDLED;
}

static irqreturn_t wake_primary(int irq, void *dev_id)
{
	(void)irq;
	(void)dev_id;
	return IRQ_WAKE_THREAD;
}

static irqreturn_t thread_fn(int irq, void *dev_id)
{
	return primary(irq, dev_id);
}

static void *spawned(void *arg)
{
	(void)arg;
	sem_post(&spawn_started);
	while (sem_wait(&spawn_go) < 0 && errno == EINTR)
		;
	__atomic_add_fetch(&handled, 1, __ATOMIC_RELAXED);
	devres_thread_spawn_done();
	return NULL;
}

/* Starts the library thread of @col; 0 or a cell's failure code. */
static int start(int col, int *ret_irq)
{
	int irq = irq_line_create("sec-signals");

	*ret_irq = irq;
	if (irq < 0)
		return 20;
	switch (col) {
	case 0:
		if (request_irq((unsigned int)irq, primary, 0, "sec", NULL))
			return 21;
		return irq_line_raise_wait(irq) ? 22 : 0;
	case 1:
		if (request_threaded_irq((unsigned int)irq, wake_primary,
					 thread_fn, IRQF_ONESHOT, "sec", NULL))
			return 21;
		return irq_line_raise_wait(irq) ? 22 : 0;
	default:
		if (devres_thread_spawn(spawned, NULL))
			return 23;
		while (sem_wait(&spawn_started) < 0 && errno == EINTR)
			;
		return 0;
	}
}

/* The library thread of @col still works; 0 or a failure code. */
static int exercise(int col, int irq)
{
	int before = __atomic_load_n(&handled, __ATOMIC_RELAXED);

	if (col == 2) {
		sem_post(&spawn_go);
		for (int i = 0; i < 2000; i++) {
			if (__atomic_load_n(&handled, __ATOMIC_RELAXED) >
			    before)
				return 0;
			usleep(1000);
		}
		return 30;
	}
	if (irq_line_raise_wait(irq))
		return 31;
	return __atomic_load_n(&handled, __ATOMIC_RELAXED) > before ? 0 : 32;
}

/* Sends @sig to the process; it must come out of @sfd, in this thread. */
static int take(int sfd, int sig)
{
	struct signalfd_siginfo si;
	ssize_t n;

	if (kill(getpid(), sig))
		return 40;
	n = read(sfd, &si, sizeof(si));
	if (n != (ssize_t)sizeof(si) || (int)si.ssi_signo != sig)
		return 41;
	return 0;
}

static int cell(int row, int col)
{
	int before[MAX_TASKS], nbefore, irq = -1, rc;
	sigset_t set;
	int sfd = -1;

	alarm(ALARM_S);
	sem_init(&spawn_go, 0, 0);
	sem_init(&spawn_started, 0, 0);
	/* The library's threads are made from a thread that blocks nothing. */
	sigemptyset(&set);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
	nbefore = list_tasks(before);
	rc = start(col, &irq);
	if (rc)
		return rc;
	rc = check_new_tasks(before, nbefore);
	if (rc)
		return rc;

	/* The program sets its signals up once the library runs. */
	sigemptyset(&set);
	switch (row) {
	case 0:
		sigaddset(&set, SIGUSR1);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGINT);
		break;
	case 1:
		signal(SIGCHLD, SIG_IGN);
		sigaddset(&set, SIGUSR1);
		break;
	case 2:
		signal(SIGPIPE, SIG_IGN);
		sigaddset(&set, SIGUSR1);
		break;
	default:
		sigfillset(&set);
		sigdelset(&set, SIGALRM); /* the cell's own alarm */
		break;
	}
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		return 50;
	rc = exercise(col, irq);
	if (rc)
		return rc;
	if (row == 1) {
		/* An ignored SIGCHLD reaps by itself; the library waits on. */
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) >= 0 || errno != ECHILD)
			return 51;
	}
	if (row == 2) {
		int p[2];

		/* An ignored SIGPIPE: EPIPE, and the process lives on. */
		if (pipe2(p, O_CLOEXEC) || close(p[0]) ||
		    write(p[1], "x", 1) >= 0 || errno != EPIPE)
			return 52;
		close(p[1]);
	}
	rc = take(sfd, SIGUSR1);
	if (!rc && (row == 0 || row == 3))
		rc = take(sfd, SIGTERM);
	if (!rc && (row == 0 || row == 3))
		rc = take(sfd, SIGINT);
	if (!rc && row == 3)
		rc = take(sfd, SIGCHLD);
	if (rc)
		return rc;
	if (col < 2) {
		free_irq((unsigned int)irq, NULL);
		(void)irq_line_destroy(irq);
	}
	return 0;
}

static void test_signals(void **state)
{
	(void)state;
	run_cells_in_children(cell, rows, ARRAY_SIZE(rows), cols,
			      ARRAY_SIZE(cols));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

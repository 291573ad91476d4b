/* SPDX-License-Identifier: MIT */
/*
 * The fixture test-hostile-args and test-hostile-scalars give the
 * generated calls (hostile-fixtures.c): a valid argument of each kind,
 * arg_<kind>(function, argument), made in the child that first needs it.
 */
#ifndef DEVRES_TESTS_HOSTILE_FIXTURES_H
#define DEVRES_TESTS_HOSTILE_FIXTURES_H

#include <stdbool.h>
#include <stddef.h>
#include <devres/device.h>
#include <devres/pci_fake.h>

/* The device the calls are given; ready once a call has asked for it. */
extern struct device hdev;
extern bool hdev_ready;
/* The fake PCI tree, made by the test before each child. */
extern struct pci_fake *tree;

long arg_int(const char *func, const char *arg);
void *arg_fn(const char *func, const char *arg);
void *arg_buf(const char *func, const char *arg);
void *arg_str(const char *func, const char *arg);
void *arg_page(const char *func, const char *arg);
void *arg_device(const char *func, const char *arg);
void *arg_pci_dev(const char *func, const char *arg);
void *arg_pci_fake(const char *func, const char *arg);
void *arg_pci_fake_dev(const char *func, const char *arg);
void *arg_pci_device_id(const char *func, const char *arg);
void *arg_dma_pool(const char *func, const char *arg);
void *arg_devres_dma_ops(const char *func, const char *arg);
void *arg_resource(const char *func, const char *arg);
void *arg_platform_device(const char *func, const char *arg);
void *arg_devres_thread(const char *func, const char *arg);
void *arg_bus_type(const char *func, const char *arg);
void *arg_device_driver(const char *func, const char *arg);
void *arg_devres_liveobj_descr(const char *func, const char *arg);
void *arg_devres_ledger(const char *func, const char *arg);
void *arg_devres_stats(const char *func, const char *arg);
void *arg_devres_sweep_result(const char *func, const char *arg);

#endif /* DEVRES_TESTS_HOSTILE_FIXTURES_H */

#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

void tp_report_init(struct tp_report *r)
{
	memset(r, 0, sizeof(*r));
	r->worst_device = UINT32_MAX;
}

enum tp_status tp_report_alloc(struct tp_report *r, uint32_t n_devices,
			       struct tp_error *err)
{
	free(r->devices);
	r->devices = tp_calloc(n_devices, sizeof(*r->devices));
	if (!r->devices)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	r->n_devices = n_devices;
	return TP_OK;
}

void tp_report_release(struct tp_report *r)
{
	if (!r)
		return;
	free(r->devices);
	free(r->links);
	tp_report_init(r);
}

void tp_report_basis_describe(const struct tp_report_basis *b, char *buf,
			      size_t size)
{
	int n;

	if (!size)
		return;
	buf[0] = '\0';
	if (!b->runtime[0])
		return;
	if (!b->calibrated) {
		n = snprintf(buf, size, "runtime %s, shipped constants",
			     b->runtime);
		if (n <= 0 || (size_t)n >= size || !(b->validation_runs > 0))
			return;
		if (b->validation_runtime)
			snprintf(buf + n, size - (size_t)n,
				 ": mean |error| %.1f%%, max %.1f%% on the %u "
				 "published run%s under %s (data/validation)",
				 100 * b->validation_mean_error,
				 100 * b->validation_max_error,
				 b->validation_runs,
				 b->validation_runs == 1 ? "" : "s", b->runtime);
		else
			snprintf(buf + n, size - (size_t)n,
				 ": mean |error| %.1f%%, max %.1f%% on the %u "
				 "published runs of data/validation%s%s",
				 100 * b->validation_mean_error,
				 100 * b->validation_max_error,
				 b->validation_runs,
				 strcmp(b->runtime, "none") ? ", none under "
							    : " (each under "
							      "its runtime)",
				 strcmp(b->runtime, "none") ? b->runtime : "");
		return;
	}
	n = snprintf(buf, size,
		     "runtime %s, calibrated on %s (%u runs, mean |error| "
		     "%.1f%%",
		     b->runtime, b->fitted_on[0] ? b->fitted_on : "(unnamed)",
		     b->runs, 100 * b->fit_error);
	if (n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n,
			 b->holdout_runs ? "; %u held out, %.1f%%)" : ")",
			 b->holdout_runs, 100 * b->holdout_error);
}

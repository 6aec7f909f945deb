#include "report.h"

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

/*
 * topo.c - `tagplan topo`.
 */
#include "cli.h"

int cmd_topo(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("topo", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("topo", "issues 3 and 7, topology presets");
}

/*
 * simulate.c - `tagplan simulate`.
 */
#include "cli.h"

int cmd_simulate(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("simulate", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("simulate", "issue 3, simulator");
}

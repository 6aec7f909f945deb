/*
 * plan.c - `tagplan plan`.
 */
#include "cli.h"

int cmd_plan(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("plan", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("plan", "issue 4, search");
}

/*
 * check.c - `tagplan check`.
 */
#include "cli.h"

int cmd_check(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("check", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("check", "issue 6, plan outputs");
}

/*
 * inspect.c - `tagplan inspect`.
 */
#include "cli.h"

int cmd_inspect(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("inspect", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("inspect", "issue 2, foundation");
}

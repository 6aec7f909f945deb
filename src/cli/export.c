/*
 * export.c - `tagplan export`.
 */
#include "cli.h"

int cmd_export(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("export", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("export", "issue 6, plan outputs");
}

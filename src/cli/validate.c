/*
 * validate.c - `tagplan validate`.
 */
#include "cli.h"

int cmd_validate(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("validate", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("validate", "issue 2, foundation");
}

/*
 * model.c - `tagplan model`.
 */
#include "cli.h"

int cmd_model(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("model", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("model", "issues 3 and 7, model builders");
}

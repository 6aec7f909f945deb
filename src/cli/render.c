/*
 * render.c - `tagplan render`.
 */
#include "cli.h"

int cmd_render(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("render", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("render", "issue 6, plan outputs");
}

/*
 * train.c - `tagplan train`.
 */
#include "cli.h"

int cmd_train(int argc, char **argv)
{
	struct tp_opt opts[] = {{0}};
	int code;

	if (tp_opts_parse("train", "[OPTIONS]", "", opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	return tp_cli_not_yet("train", "issue 5, GNN");
}

/*
 * progress.h - plan's progress line on a terminal (stderr, only when it
 * is one), fitted to the terminal's width so that redrawing it with "\r"
 * never wraps (an 82-column line in an 80-column terminal scrolled a new
 * line per redraw).
 *
 * Forms, by the width W (TIOCGWINSZ, else $COLUMNS, else 80):
 *   W >= 60   [########....] 42%  search    best 1.234 s (1.10x)  12 s
 *             left  345 playouts/s   (the bar 10 to 24 columns; the
 *             ratio to the best baseline, the time left and the rate
 *             dropped from the right when they do not fit)
 *   30..59    42% search best 1.234 s 12 s left
 *   below 30  42% 1.234 s
 * Every form is at most W - 1 columns (the last column would wrap on
 * some terminals) and ASCII only.
 */
#ifndef TP_CLI_PROGRESS_H
#define TP_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "search/search.h"

/* Columns of the terminal on fd (see top). */
int tp_cli_terminal_columns(int fd);

/* The line for p in a terminal of cols columns, NUL-terminated in buf
 * (no "\r", no escape sequences). */
void tp_cli_progress_format(const struct tp_search_progress *p, int cols,
			    char *buf, size_t size);

/* The line on stderr, redrawn in place at the terminal's width (read
 * each time: the window may be resized) while on; tp_cli_bar_draw has
 * the shape of tp_search_options.progress with ctx the bar. */
struct tp_cli_bar {
	bool on;
	bool drawn;
};

void tp_cli_bar_draw(void *ctx, const struct tp_search_progress *p);
/* Erase the line when one was drawn. */
void tp_cli_bar_clear(struct tp_cli_bar *b);

#endif

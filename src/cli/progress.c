/*
 * progress.c - plan's progress line on a terminal, fitted to its width
 * (progress.h).
 */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tp_cli_terminal_columns(int fd)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");

	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (env && atoi(env) > 0)
		return atoi(env);
	return 80;
}

/* Append s to buf (length *n, capacity size) when it fits in room
 * columns; true when it did.  Every piece is ASCII: bytes are columns. */
static bool put(char *buf, size_t size, size_t *n, size_t room, const char *s)
{
	size_t l = strlen(s);

	if (*n + l > room || *n + l + 1 > size)
		return false;
	memcpy(buf + *n, s, l + 1);
	*n += l;
	return true;
}

void tp_cli_progress_format(const struct tp_search_progress *p, int cols,
			    char *buf, size_t size)
{
	double frac = 0, left = -1;
	char pct[8], best[48] = "-", ratio[24] = "", eta[32] = "", rate[32] = "";
	char phase[16], head[96];
	size_t room = cols > 1 ? (size_t)cols - 1 : 0, n = 0;

	if (!size)
		return;
	buf[0] = '\0';
	if (p->time_limit_s > 0) {
		frac = p->elapsed_s / p->time_limit_s;
		left = p->time_limit_s - p->elapsed_s;
	}
	if (p->playout_limit > 0) {
		double f = (double)p->playouts / (double)p->playout_limit;
		if (f > frac) {
			frac = f;
			if (p->elapsed_s > 0 && p->playouts > 0)
				left = p->elapsed_s * (1 - f) / f;
		}
	}
	if (frac > 1)
		frac = 1;
	if (frac < 0)
		frac = 0;
	snprintf(pct, sizeof(pct), "%3.0f%%", frac * 100);
	snprintf(phase, sizeof(phase), "%.9s", p->phase ? p->phase : "");
	if (p->have_best)
		snprintf(best, sizeof(best), p->cost ? "$%.4g%s" : "%.4g s%s",
			 p->best_time_s, p->best_feasible ? "" : " (no fit)");
	if (p->have_best && p->best_feasible && p->reference_time_s > 0 &&
	    p->best_time_s > 0)
		snprintf(ratio, sizeof(ratio), " (%.2fx)",
			 p->reference_time_s / p->best_time_s);
	if (left >= 0)
		snprintf(eta, sizeof(eta), "  %.0f s left", left);
	if (p->elapsed_s > 0.5)
		snprintf(rate, sizeof(rate), "  %.0f playouts/s",
			 (double)p->playouts / p->elapsed_s);

	if (cols >= 60) {
		/* [####....] 42%  search    best 1.234 s (1.10x)  12 s left
		 * 345 playouts/s: the bar takes what the text leaves, 10 to
		 * 24 columns; the optional pieces go from the right */
		int width;
		snprintf(head, sizeof(head), "] %s  %-9s best %s", pct, phase,
			 best);
		width = (int)room - 1 - (int)strlen(head);
		{
			int extra = (int)(strlen(ratio) + strlen(eta) +
					  strlen(rate));
			if (width - extra >= 10)
				width -= extra;
			else if (width - (int)(strlen(ratio) + strlen(eta)) >=
				 10) {
				width -= (int)(strlen(ratio) + strlen(eta));
				rate[0] = '\0';
			} else {
				width -= (int)strlen(ratio);
				eta[0] = rate[0] = '\0';
			}
		}
		if (width > 24)
			width = 24;
		if (width < 10) {
			width = 10;
			ratio[0] = '\0';
		}
		{
			int fill = (int)(frac * width + 0.5);
			char bar[32];
			memset(bar, '#', (size_t)fill);
			memset(bar + fill, '.', (size_t)(width - fill));
			bar[width] = '\0';
			put(buf, size, &n, room, "[");
			put(buf, size, &n, room, bar);
		}
		put(buf, size, &n, room, head);
		if (put(buf, size, &n, room, ratio) &&
		    put(buf, size, &n, room, eta))
			put(buf, size, &n, room, rate);
		return;
	}
	/* below 60 columns, no bar: "42% search best 1.234 s 12 s left";
	 * below 30: "42% 1.234 s" */
	if (cols >= 30) {
		snprintf(head, sizeof(head), "%s %s best %s", pct, phase, best);
		if (!put(buf, size, &n, room, head)) {
			snprintf(head, sizeof(head), "%s best %s", pct, best);
			put(buf, size, &n, room, head);
		}
		put(buf, size, &n, room, eta[0] ? eta + 1 : "");
		return;
	}
	snprintf(head, sizeof(head), "%s %s", pct, best);
	if (!put(buf, size, &n, room, head))
		put(buf, size, &n, room, pct);
}

void tp_cli_bar_draw(void *ctx, const struct tp_search_progress *p)
{
	struct tp_cli_bar *b = ctx;
	char line[512];

	if (!b->on)
		return;
	tp_cli_progress_format(p, tp_cli_terminal_columns(STDERR_FILENO), line,
			       sizeof(line));
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	b->drawn = true;
}

void tp_cli_bar_clear(struct tp_cli_bar *b)
{
	if (b->on && b->drawn) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	b->drawn = false;
}

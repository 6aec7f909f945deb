/*
 * bench_reliability.c - how closely `tagplan plan` honours --time-limit on
 * the largest shipped input: GPT-3 175B (data/models/gpt3-175b.json) on
 * 128 DGX-A100 (data/topologies/dgx-a100-128.json, 1024 GPUs), with no
 * playout limit (issue 9: "within 5% even on the largest inputs").
 *
 * Per limit S: the command's wall time (process start to exit: loading
 * both files, the search, scoring the answer, writing the plan), the
 * search's own time (summary.search.timing.search_seconds) and both as a
 * ratio to S.  The run is a child process, as a user would see it.
 * Environment: TAGPLAN_BIN, TAGPLAN_DATA (set by `make bench`),
 * TAGPLAN_BENCH_LIMITS (comma-separated seconds, default "5,10,30"),
 * TAGPLAN_BENCH_THREADS (default 2).  Wall-clock figures: a loaded
 * machine shifts them; the load average is printed with them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* Run bin with argv; its exit code (or 128 + signal). */
static int run(const char *bin, const char *const *argv)
{
	pid_t pid;
	int st;

	fflush(stdout); /* not twice through the child's freopen */
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* summary.search.timing.search_seconds of a plan file, -1 if absent. */
static double search_seconds(const char *path)
{
	static const char key[] = "\"search_seconds\": ";
	char buf[1 << 16];
	size_t n;
	FILE *f = fopen(path, "r");
	const char *p;
	double s = -1;

	if (!f)
		return -1;
	/* the summary is at the end of the file */
	fseek(f, 0, SEEK_END);
	if (ftell(f) > (long)sizeof buf - 1)
		fseek(f, -(long)sizeof buf + 1, SEEK_END);
	else
		fseek(f, 0, SEEK_SET);
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	p = strstr(buf, key);
	if (p)
		s = strtod(p + strlen(key), NULL);
	return s;
}

int main(void)
{
	const char *bin = env_or("TAGPLAN_BIN", "./tagplan");
	const char *data = env_or("TAGPLAN_DATA", "data");
	const char *threads = env_or("TAGPLAN_BENCH_THREADS", "2");
	char limits[256], model[4096], topo[4096], out[] =
		"/tmp/tagplan-bench-XXXXXX";
	int fd, worst_ok = 1;
	double loadavg[1] = {0};

	snprintf(limits, sizeof limits, "%s",
		 env_or("TAGPLAN_BENCH_LIMITS", "5,10,30"));
	snprintf(model, sizeof model, "%s/models/gpt3-175b.json", data);
	snprintf(topo, sizeof topo, "%s/topologies/dgx-a100-128.json", data);
	fd = mkstemp(out);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	printf("--time-limit on GPT-3 175B x 1024 A100 (dgx-a100:128), "
	       "--playouts 0, --threads %s\n",
	       threads);
	printf("%8s %10s %8s %10s %8s %6s %s\n", "limit_s", "wall_s",
	       "wall/S", "search_s", "search/S", "exit", "load");
	for (char *tok = strtok(limits, ","); tok; tok = strtok(NULL, ",")) {
		const char *argv[] = {bin,	  "plan",	  "-m",
				      model,	  "-t",		  topo,
				      "--time-limit", tok,	  "--playouts",
				      "0",	  "--threads",	  threads,
				      "-q",	  "-o",		  out,
				      NULL};
		double limit = strtod(tok, NULL), t0, wall, ss;
		int code;

		if (!(limit > 0))
			continue;
		t0 = now();
		code = run(bin, argv);
		wall = now() - t0;
		ss = search_seconds(out);
		if (getloadavg(loadavg, 1) < 1)
			loadavg[0] = -1;
		printf("%8.1f %10.2f %8.3f %10.2f %8.3f %6d %.1f\n", limit,
		       wall, wall / limit, ss, ss / limit, code, loadavg[0]);
		if (code != 0 || wall > 1.05 * limit)
			worst_ok = 0;
	}
	unlink(out);
	printf("target: the command ends within 5%% of --time-limit: %s\n",
	       worst_ok ? "met" : "MISSED (see the table)");
	return 0;
}

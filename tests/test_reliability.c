/*
 * test_reliability.c - suite "reliability": regression inputs found by
 * fuzzing, documented limits, atomic outputs, signals during `plan`,
 * determinism and provenance of plans.
 *
 * The fuzz harness (fuzz/harness.c) is compiled into this file so that a
 * regression input replays through exactly the checks that found it.
 */
/* posix_openpt, grantpt, unlockpt, ptsname */
#define _XOPEN_SOURCE 700

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../fuzz/harness.c"
#include "core/strategy.h"
#include "io/io.h"
#include "search/search.h"
#include "util.h"

/* ---- regression inputs ------------------------------------------------ */

/* Replay file dir/name through the harness target its name's prefix
 * picks, or as's when as is not NULL (a file of another name). */
static int replay(const char *dir, const char *name, const char *as,
		  char *why, size_t n)
{
	const char *key = as ? as : name;
	static struct fz_fixture plan_fx, strategy_fx;
	static int loaded;
	char path[4096];
	struct tp_error err;
	const char *bug = NULL;
	size_t len;
	char *data;

	if (!loaded) {
		char mp[4096], tp[4096];

		snprintf(mp, sizeof mp, "%s", tp_test_path(FZ_PLAN_MODEL));
		snprintf(tp, sizeof tp, "%s", tp_test_path(FZ_PLAN_TOPOLOGY));
		ck_assert_int_eq(fz_fixture_load(&plan_fx, mp, tp, &err), 0);
		snprintf(mp, sizeof mp, "%s", tp_test_path(FZ_STRATEGY_MODEL));
		snprintf(tp, sizeof tp, "%s",
			 tp_test_path(FZ_STRATEGY_TOPOLOGY));
		ck_assert_int_eq(fz_fixture_load(&strategy_fx, mp, tp, &err),
				 0);
		loaded = 1;
	}
	snprintf(path, sizeof path, "%s/%s", dir, name);
	data = tp_test_read(path, &len);
	ck_assert_msg(data != NULL, "cannot read %s", path);
	tp_error_clear(&err);
	if (!strncmp(key, "model-", 6))
		bug = fz_model_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "topology-", 9))
		bug = fz_topology_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "plan-", 5))
		bug = fz_plan_one(&plan_fx, (const uint8_t *)data, len, &err);
	else if (!strncmp(key, "pipeline-", 9))
		bug = fz_pipeline_one(&plan_fx, (const uint8_t *)data, len,
				      &err);
	else if (!strncmp(key, "hf-", 3))
		bug = fz_hf_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "strategy-", 9))
		bug = fz_strategy_one(&strategy_fx, (const uint8_t *)data, len,
				      &err);
	else if (!strncmp(key, "report-", 7))
		bug = fz_report_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "nvsmi-", 6))
		bug = fz_nvsmi_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "devices-", 8))
		bug = fz_devices_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "weights-", 8))
		bug = fz_weights_one((const uint8_t *)data, len, &err);
	else if (!strncmp(key, "runtime-", 8))
		bug = fz_runtime_one(&strategy_fx, (const uint8_t *)data, len,
				     &err);
	else if (!strncmp(key, "runs-", 5))
		bug = fz_runs_one((const uint8_t *)data, len, &err);
	else
		ck_abort_msg("%s: no target prefix (model-, topology-, plan-, "
			     "pipeline-, hf-, strategy-, report-, nvsmi-, "
			     "devices-, weights-, runtime-, runs-)",
			     name);
	free(data);
	if (bug)
		snprintf(why, n, "%s: %s (%s)", name, bug, err.msg);
	return bug != NULL;
}

/* Every file of tests/data/regress replays without a broken contract. */
START_TEST(test_regress_replay)
{
	const char *dir = tp_test_path("data/regress");
	DIR *d = opendir(dir);
	struct dirent *e;
	char why[2048];
	int n = 0;

	ck_assert_ptr_nonnull(d);
	setenv("TAGPLAN_DATA", tp_data_file(""), 0);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "README"))
			continue;
		ck_assert_msg(!replay(dir, e->d_name, NULL, why, sizeof why),
			      "%s",
			      why);
		n++;
	}
	closedir(d);
	ck_assert_int_gt(n, 0);
}
END_TEST

/* The shipped runtime profiles (each simulates the strategy fixture with
 * finite figures under its behaviour) and the validation run lists go
 * through the runtime and runs fuzz targets' contracts. */
START_TEST(test_shipped_runtimes_and_runs)
{
	const char *const dirs[] = {"runtimes", "validation"};
	char why[2048], dir[4096];
	int n = 0;

	setenv("TAGPLAN_DATA", tp_data_file(""), 0);
	for (size_t k = 0; k < 2; k++) {
		DIR *d;
		struct dirent *e;

		snprintf(dir, sizeof dir, "%s", tp_data_file(dirs[k]));
		d = opendir(dir);
		ck_assert_msg(d != NULL, "%s", dir);
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l < 5 || strcmp(e->d_name + l - 5, ".json"))
				continue;
			ck_assert_msg(!replay(dir, e->d_name,
					      k ? "runs-" : "runtime-", why,
					      sizeof why),
				      "%s", why);
			n++;
		}
		closedir(d);
	}
	ck_assert_int_ge(n, 8);
}
END_TEST

/* strategy-empty.txt: the canonical form of every strategy parses back. */
START_TEST(test_strategy_canonical_parses)
{
	struct tp_strategy s, s2;
	struct tp_error err;
	char a[512], b[512];

	tp_strategy_default(&s);
	tp_strategy_format(&s, a, sizeof a);
	ck_assert_msg(strstr(a, "dp=auto") && strstr(a, "gbs=model"), "%s",
		      a);
	ck_assert_msg(tp_strategy_parse(a, &s2, &err) == TP_OK, "%s: %s", a,
		      err.msg);
	tp_strategy_format(&s2, b, sizeof b);
	ck_assert_str_eq(a, b);
}
END_TEST


/* Run tagplan; check exit 2 and a message containing want. */
static void expect_refused(const char *const *argv, const char *want)
{
	struct tp_run r;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 2, "%s: exit %d, stderr: %s", argv[1],
		      r.status, r.err);
	ck_assert_msg(strstr(r.err, want) != NULL,
		      "%s: stderr lacks \"%s\": %s", argv[1], want, r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}

/* plan-compression-ineligible.json: what the simulator would refuse,
 * `validate -m -t` refuses too (exit 2, with the JSON path). */
START_TEST(test_validate_refuses_what_simulate_refuses)
{
	const char *plan = tp_test_path("data/regress/"
					"plan-compression-ineligible.json");
	const char *argv[] = {"tagplan", "validate", "-m",
			      tp_test_path(FZ_PLAN_MODEL), "-t",
			      tp_test_path(FZ_PLAN_TOPOLOGY), plan, NULL};

	expect_refused(argv, "$.groups[1].compression.sfb_ops");
}
END_TEST

/* ---- documented limits ------------------------------------------------ */

/* A 2 GiB (sparse) file is refused from its size, without reading it:
 * the default limit is 1 GiB. */
START_TEST(test_limit_file_size)
{
	char path[512];
	int fd;
	struct tp_error err;
	char *data = NULL;
	size_t len = 0;
	time_t t0 = time(NULL);

	snprintf(path, sizeof path, "%s/big.json", tp_test_tmpdir());
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)2 << 30), 0);
	close(fd);
	{
		const char *argv[] = {"tagplan", "validate", path, NULL};
		expect_refused(argv, "larger than the size limit");
	}
	/* the library says TP_ELIMIT, and the same for a tighter limit */
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_read(path, 0, &data, &len, &err), TP_ELIMIT);
	ck_assert_ptr_null(data);
	ck_assert_int_eq(tp_file_read(tp_data_file("demo-model.json"), 100,
				      &data, &len, &err),
			 TP_ELIMIT);
	ck_assert_ptr_null(data);
	{
		const char *argv[] = {"tagplan", "validate", "--max-bytes",
				      "100", tp_data_file("demo-model.json"),
				      NULL};
		expect_refused(argv, "size limit of 100 bytes");
	}
	/* reading 2 GiB would take far longer than this */
	ck_assert_int_le(time(NULL) - t0, 20);
	unlink(path);
}
END_TEST

/* 1,000,000 nested arrays: refused at the depth limit (64), in constant
 * stack (a recursive reader would overflow it). */
START_TEST(test_limit_nesting_depth)
{
	const size_t depth = 1000000;
	size_t n = 0;
	char *text = malloc(2 * depth + 64);
	char path[512];
	struct tp_model m;
	struct tp_error err;

	ck_assert_ptr_nonnull(text);
	n += (size_t)sprintf(text, "{\"format\":\"tagplan-model/1\",\"ops\":");
	memset(text + n, '[', depth);
	n += depth;
	memset(text + n, ']', depth);
	n += depth;
	text[n++] = '}';
	text[n] = '\0';
	tp_model_init(&m);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_model_load("deep.json", text, n, NULL, &m, &err),
			 TP_ELIMIT);
	ck_assert_msg(strstr(err.msg, "nesting deeper than 64"), "%s",
		      err.msg);
	ck_assert_int_eq(err.line, 1);
	tp_model_release(&m);
	snprintf(path, sizeof path, "%s/deep.json", tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(path, text, n), 0);
	free(text);
	{
		const char *argv[] = {"tagplan", "validate", path, NULL};
		expect_refused(argv, "nesting deeper than 64");
	}
}
END_TEST

/* More than 1,048,576 devices (or 4096 in one node): refused from the
 * counts, before any device is built.  Node and device counts multiply. */
START_TEST(test_limit_devices)
{
	static const char *const topos[] = {
		"{\"format\":\"tagplan-topology/1\",\"name\":\"x\",\"nodes\":"
		"[{\"name\":\"n\",\"devices\":[{\"type\":\"A100-SXM4-80GB\","
		"\"count\":4097}]}]}",
		"{\"format\":\"tagplan-topology/1\",\"name\":\"x\",\"nodes\":"
		"[{\"name\":\"n\",\"count\":1048576,\"devices\":[{\"type\":"
		"\"A100-SXM4-80GB\",\"count\":4096}]}]}",
		"{\"format\":\"tagplan-topology/1\",\"name\":\"x\",\"nodes\":"
		"[{\"name\":\"n\",\"count\":1000000000,\"devices\":[{\"type\":"
		"\"A100-SXM4-80GB\",\"count\":1}]}]}"};
	struct tp_cluster c;
	struct tp_error err;
	time_t t0 = time(NULL);

	for (size_t i = 0; i < sizeof topos / sizeof topos[0]; i++) {
		tp_cluster_init(&c);
		tp_error_clear(&err);
		ck_assert_int_ne(tp_topology_load("t.json", topos[i],
						  strlen(topos[i]), NULL, &c,
						  &err),
				 TP_OK);
		ck_assert_msg(strstr(err.msg, i ? "1048576" : "4096"),
			      "topology %zu: %s", i, err.msg);
		ck_assert_uint_eq(c.devices.n, 0);
		tp_cluster_release(&c);
	}
	{
		const char *argv[] = {"tagplan", "topo", "dgx-a100:131073",
				      "-o", "-", NULL};
		expect_refused(argv, "more than 1048576 devices");
	}
	/* building 16.7 million devices would not finish in time */
	ck_assert_int_le(time(NULL) - t0, 10);
}
END_TEST

/* A topology text: n nodes of `per` devices, node i's PCIe fabric at
 * 10 GB/s plus i * step B/s (step 0: identical nodes); with chain, one
 * node whose devices are joined only by a chain of links.  Caller
 * frees. */
static char *route_topology(unsigned n, unsigned per, double step,
			    bool chain)
{
	size_t cap = 4096 + (size_t)n * 256 + (chain ? (size_t)per * 80 : 0);
	char *t = malloc(cap);
	size_t len;

	ck_assert_ptr_nonnull(t);
	len = (size_t)snprintf(t, cap, "{\"format\":\"tagplan-topology/1\","
				       "\"name\":\"x\",\"nodes\":[");
	for (unsigned i = 0; i < n; i++) {
		len += (size_t)snprintf(t + len, cap - len,
					"%s{\"name\":\"n%u\",\"devices\":[{"
					"\"type\":\"A100-SXM4-80GB\","
					"\"count\":%u}]",
					i ? "," : "", i, per);
		if (!chain)
			len += (size_t)snprintf(
			    t + len, cap - len,
			    ",\"fabric\":{\"kind\":\"pcie\",\"bandwidth_Bps\":"
			    "%.17g,\"latency_s\":5e-6},\"nic\":{\"count\":1,"
			    "\"bandwidth_Bps\":2.5e10,\"latency_s\":1e-5}",
			    1e10 + i * step);
		else {
			len += (size_t)snprintf(t + len, cap - len,
						",\"links\":[");
			for (unsigned k = 0; k + 1 < per; k++)
				len += (size_t)snprintf(
				    t + len, cap - len,
				    "%s{\"a\":%u,\"b\":%u,\"bandwidth_Bps\":5e10,"
				    "\"latency_s\":2e-6}",
				    k ? "," : "", k, k + 1);
			len += (size_t)snprintf(t + len, cap - len, "]");
		}
		len += (size_t)snprintf(t + len, cap - len, "}");
	}
	snprintf(t + len, cap - len, "]}");
	return t;
}

/* Routes are a table per kind of node (identical nodes share one), so
 * their memory grows with the number of distinct nodes times their
 * devices squared, not with the file: a few kilobytes asking for 256
 * slightly different nodes of 4096 GPUs needed some 67 GB (inspect ran
 * out of time at 8 GB), and a chain of links through a node's devices
 * was stored whole (1.4 GB for 1024 devices) before the route length
 * check refused it.  Both are refused before the tables are built,
 * naming the node; distinct small nodes still load. */
START_TEST(test_limit_route_tables)
{
	struct {
		unsigned n, per;
		double step;
		bool chain;
		const char *want;
	} cases[] = {
		{4, 4096, 1e6, false,
		 "node \"n3\" (4096 devices) differs from the nodes before "
		 "it"},
		{1, 1024, 0, true,
		 "node \"n0\": a route between two of its devices (or to its "
		 "NIC) crosses more than 32 links"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *t = route_topology(cases[i].n, cases[i].per,
					 cases[i].step, cases[i].chain);
		struct tp_cluster c;
		struct tp_error err;

		tp_cluster_init(&c);
		tp_error_clear(&err);
		ck_assert_int_eq(tp_topology_load("t.json", t, strlen(t), NULL,
						  &c, &err),
				 TP_ELIMIT);
		ck_assert_msg(!strcmp(err.path, "$.nodes") &&
				  strstr(err.msg, cases[i].want),
			      "case %zu: %s: %s", i, err.path, err.msg);
		tp_cluster_release(&c);
		free(t);
	}
	{
		/* 2048 nodes of 8 GPUs, every fabric different */
		char *t = route_topology(2048, 8, 1e3, false);
		struct tp_cluster c;
		struct tp_error err;

		tp_cluster_init(&c);
		tp_error_clear(&err);
		ck_assert_msg(tp_topology_load("t.json", t, strlen(t), NULL, &c,
					       &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_uint_eq(c.devices.n, 16384);
		tp_cluster_release(&c);
		free(t);
	}
}
END_TEST

/* Built models: absurd dimensions are refused before building (the
 * builders cap transformers at 200,000 ops, layers at 65536). */
START_TEST(test_limit_ops_of_built_models)
{
	char path[512];
	static const char hf[] =
		"{\"model_type\":\"mixtral\",\"hidden_size\":4096,"
		"\"num_hidden_layers\":1000,\"num_attention_heads\":32,"
		"\"vocab_size\":32000,\"intermediate_size\":11008,"
		"\"num_local_experts\":4096}";
	static const char hf_layers[] =
		"{\"model_type\":\"llama\",\"hidden_size\":4096,"
		"\"num_hidden_layers\":1000000000,\"num_attention_heads\":32}";

	{
		const char *argv[] = {"tagplan", "model",   "gpt",     "--hidden",
				      "1024",    "--layers", "60000",  "--heads",
				      "16",      "--seq",   "1024",    "--vocab",
				      "50000",   "--batch", "8",       "-o",
				      "-",       NULL};
		expect_refused(argv, "more than 200000 ops");
	}
	snprintf(path, sizeof path, "%s/config.json", tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(path, hf, strlen(hf)), 0);
	{
		char src[600];
		const char *argv[] = {"tagplan", "model", src, "-o", "-", NULL};

		snprintf(src, sizeof src, "hf:%s", path);
		expect_refused(argv, "more than 200000 ops");
		ck_assert_int_eq(
			tp_test_write(path, hf_layers, strlen(hf_layers)), 0);
		expect_refused(argv, "$.num_hidden_layers");
	}
}
END_TEST

/* Strategy degrees over the parser's bound are usage errors. */
START_TEST(test_limit_strategy_numbers)
{
	struct tp_strategy s;
	struct tp_error err;

	ck_assert_int_eq(tp_strategy_parse("tp=1048577", &s, &err), TP_EUSAGE);
	ck_assert_int_eq(
		tp_strategy_parse("dp=99999999999999999999999", &s, &err),
		TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("gbs=1099511627777", &s, &err),
			 TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("schedule=interleaved:1025", &s,
					   &err),
			 TP_EUSAGE);
}
END_TEST

/* The search's tree budget: with no room for even a root, or for a few
 * nodes, the search still answers (tree_full) instead of failing. */
START_TEST(test_limit_search_tree_budget)
{
	const size_t budgets[] = {1, 4096};
	struct fz_fixture fx;
	struct tp_error err;
	char mp[4096], tp[4096];

	snprintf(mp, sizeof mp, "%s", tp_test_path(FZ_PLAN_MODEL));
	snprintf(tp, sizeof tp, "%s", tp_test_path(FZ_PLAN_TOPOLOGY));
	ck_assert_int_eq(fz_fixture_load(&fx, mp, tp, &err), TP_OK);
	for (size_t i = 0; i < 2; i++) {
		struct tp_search_simeval ctx;
		struct tp_evaluator ev;
		struct tp_search_options o;
		struct tp_search_result r;

		tp_search_sim_evaluator(&ctx, fx.sim, NULL, &ev);
		tp_search_options_default(&o);
		o.threads = 1;
		o.playouts = 200;
		o.time_limit_s = 0;
		o.tree_bytes = budgets[i];
		tp_search_result_init(&r);
		ck_assert_int_eq(tp_search_run(&fx.model, &fx.cluster, &ev, &o,
					       &r, &err),
				 TP_OK);
		ck_assert(r.have_plan);
		ck_assert_msg(r.tree_full, "budget %zu", budgets[i]);
		ck_assert_int_eq(tp_plan_validate(&r.plan, &fx.model,
						  &fx.cluster, &err),
				 TP_OK);
		tp_search_result_release(&r);
	}
	fz_fixture_release(&fx);
}
END_TEST

/* ---- child processes: signals and kills --------------------------------- */

struct child {
	pid_t pid;
	int pty;           /* master side of the child's stderr, or -1 */
	bool piped;        /* no pseudo-terminal here (a chroot without
			      /dev/pts): stderr is a pipe, no progress bar */
	char seen[65536];  /* what the child wrote to the pty */
	size_t n_seen;
};

/* Start $TAGPLAN_BIN argv[1..] with stdout to /dev/null and stderr on a
 * pseudo-terminal (so `plan` draws its progress bar, which tells us the
 * search, and its signal handling, has started). */
static void child_start(struct child *ch, const char *const *argv)
{
	const char *bin = getenv("TAGPLAN_BIN");
	int n = 0;
	char **av;

	int pfd[2] = {-1, -1};

	memset(ch, 0, sizeof *ch);
	ch->pty = posix_openpt(O_RDWR | O_NOCTTY);
	if (ch->pty >= 0 &&
	    (grantpt(ch->pty) || unlockpt(ch->pty) || !ptsname(ch->pty) ||
	     access(ptsname(ch->pty), R_OK | W_OK))) {
		close(ch->pty);
		ch->pty = -1;
	}
	if (ch->pty < 0) {
		ck_assert_int_eq(pipe(pfd), 0);
		ch->pty = pfd[0];
		ch->piped = true;
	}
	fcntl(ch->pty, F_SETFL, fcntl(ch->pty, F_GETFL) | O_NONBLOCK);
	while (argv[n])
		n++;
	av = calloc((size_t)n + 1, sizeof *av);
	ck_assert_ptr_nonnull(av);
	av[0] = (char *)(bin ? bin : "./tagplan");
	for (int i = 1; i < n; i++)
		av[i] = (char *)argv[i];
	ch->pid = fork();
	ck_assert_int_ge(ch->pid, 0);
	if (ch->pid == 0) {
		int slave = ch->piped ? pfd[1]
				      : open(ptsname(ch->pty), O_RDWR | O_NOCTTY);
		int null = open("/dev/null", O_RDWR);

		if (slave < 0 || null < 0)
			_exit(126);
		dup2(null, 0);
		dup2(null, 1);
		dup2(slave, 2);
		execv(av[0], av);
		_exit(127);
	}
	free(av);
	if (pfd[1] >= 0)
		close(pfd[1]);
}

static void child_drain(struct child *ch)
{
	char buf[4096];
	ssize_t k;

	while ((k = read(ch->pty, buf, sizeof buf)) > 0) {
		size_t room = sizeof ch->seen - 1 - ch->n_seen;
		size_t take = (size_t)k < room ? (size_t)k : room;

		memcpy(ch->seen + ch->n_seen, buf, take);
		ch->n_seen += take;
		ch->seen[ch->n_seen] = '\0';
	}
}

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait (draining the pty) until the child wrote needle; false when it
 * exited or timeout_s passed first. */
static bool child_wait_for(struct child *ch, const char *needle,
			   double timeout_s)
{
	/* Without a terminal there is no progress bar to wait for: give
	 * the command two seconds to load and start searching instead. */
	if (ch->piped && timeout_s > 2)
		timeout_s = 2;
	for (int i = 0; i < (int)(timeout_s * 100); i++) {
		child_drain(ch);
		if (strstr(ch->seen, needle))
			return true;
		if (waitpid(ch->pid, NULL, WNOHANG) == ch->pid) {
			ch->pid = -1;
			return false;
		}
		msleep(10);
	}
	return ch->piped && waitpid(ch->pid, NULL, WNOHANG) == 0;
}

/* Wait for the child to exit; its exit code, 128 + signal, or -1 after
 * timeout_s (the child is then killed). */
static int child_wait(struct child *ch, double timeout_s)
{
	int st = 0, code = -1;

	for (int i = 0; i < (int)(timeout_s * 100); i++) {
		child_drain(ch);
		if (waitpid(ch->pid, &st, WNOHANG) == ch->pid) {
			code = WIFEXITED(st) ? WEXITSTATUS(st)
					     : 128 + WTERMSIG(st);
			break;
		}
		msleep(10);
	}
	if (code < 0) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
	}
	child_drain(ch);
	close(ch->pty);
	return code;
}

/* Validate a plan file against its model and topology. */
static void expect_valid_plan(const char *plan, const char *model,
			      const char *topo)
{
	const char *argv[] = {"tagplan", "validate", "-m", model, "-t",
			      topo,      plan,       NULL};
	struct tp_run r;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "validate %s: exit %d: %s", plan,
		      r.status, r.err);
	tp_run_free(&r);
}

/* SIGINT or SIGTERM during the search: exit 130 and the best plan so far,
 * complete and valid, at the output path. */
static void signal_during_plan(int sig)
{
	char out[512];
	const char *model = tp_data_file("demo-model.json");
	const char *topo = tp_data_file("tag-testbed.json");
	const char *argv[] = {"tagplan", "plan", "-m", model, "-t", topo,
			      "-o", out, "--time-limit", "30", "--playouts",
			      "0", NULL};
	struct child ch;
	int code;

	snprintf(out, sizeof out, "%s/out.json", tp_test_tmpdir());
	child_start(&ch, argv);
	ck_assert_msg(child_wait_for(&ch, "best", 60),
		      "no progress bar from plan: %s", ch.seen);
	msleep(300);
	ck_assert_int_eq(kill(ch.pid, sig), 0);
	code = child_wait(&ch, 60);
	ck_assert_msg(code == 130, "exit %d after signal %d: %s", code, sig,
		      ch.seen);
	ck_assert_msg(strstr(ch.seen, "interrupted"), "%s", ch.seen);
	expect_valid_plan(out, model, topo);
}

START_TEST(test_sigint_writes_best_plan)
{
	signal_during_plan(SIGINT);
}
END_TEST

START_TEST(test_sigterm_writes_best_plan)
{
	signal_during_plan(SIGTERM);
}
END_TEST

/* train: the first Ctrl-C finishes the epoch (with --steps 20000 its
 * optimiser steps alone take a while), a second one stops at once,
 * killed by SIGINT, and writes no weights; before, the handler stayed
 * and the second Ctrl-C was lost: training went on to the end of the
 * epoch, wrote the weights and exited 130.  A first Ctrl-C that lands
 * before the epoch's self-play has made its samples leaves nothing to
 * finish: train writes the weights and exits 130 at once, rightly (the
 * second Ctrl-C may still kill it after the write); on a loaded machine
 * that happens after 200 ms, so the scenario is tried again with the
 * first Ctrl-C later (the steps are what it must interrupt). */
START_TEST(test_train_second_sigint_stops)
{
	static const int delay_ms[] = {200, 2000, 6000};
	char out[512];
	const char *argv[] = {"tagplan", "train", "--games", "16",
			      "--epochs", "3", "--playouts", "8",
			      "--steps", "20000", "--threads", "1",
			      "-o", out, NULL};
	struct child ch;
	struct stat st;
	int status = 0;
	bool done = false;

	snprintf(out, sizeof out, "%s/w.weights", tp_test_tmpdir());
	for (size_t a = 0; a < sizeof(delay_ms) / sizeof(delay_ms[0]); a++) {
		unlink(out);
		done = false;
		child_start(&ch, argv);
		/* the corpus line: tp_train_run has begun, the handlers are
		 * set */
		ck_assert_msg(child_wait_for(&ch, "corpus:", 60),
			      "train did not start: %s", ch.seen);
		msleep(delay_ms[a]);
		ck_assert_int_eq(kill(ch.pid, SIGINT), 0);
		msleep(100);
		kill(ch.pid, SIGINT);
		for (int i = 0; i < 6000 && !done; i++) {
			child_drain(&ch);
			if (waitpid(ch.pid, &status, WNOHANG) == ch.pid)
				done = true;
			else
				msleep(10);
		}
		if (!done) {
			kill(ch.pid, SIGKILL);
			waitpid(ch.pid, NULL, 0);
		}
		child_drain(&ch);
		close(ch.pty);
		ck_assert_msg(done, "train still running 60 s after two "
				    "SIGINTs");
		/* the first Ctrl-C came before the epoch's steps: nothing to
		 * finish; train wrote the weights and exited 130, or the
		 * second Ctrl-C killed it just after it wrote them */
		if (strstr(ch.seen, ": 0 samples,") &&
		    a + 1 < sizeof(delay_ms) / sizeof(delay_ms[0]))
			continue;
		break;
	}
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
		      "not stopped by the second SIGINT: exit %d: %s",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1, ch.seen);
	ck_assert_msg(stat(out, &st) != 0, "weights written: %s", ch.seen);
}
END_TEST

/* Entries of dir other than keep; hidden temporaries of the atomic writer
 * (".NAME.XXXXXX") counted apart. */
static int stray_files(const char *dir, const char *keep, int *temps)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char prefix[256];
	int n = 0;

	ck_assert_ptr_nonnull(d);
	snprintf(prefix, sizeof prefix, ".%s.", keep);
	*temps = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, keep))
			continue;
		if (!strncmp(e->d_name, prefix, strlen(prefix)))
			(*temps)++;
		else
			n++;
	}
	closedir(d);
	return n;
}

/* The hidden temporaries ".KEEP.*" in dir that hold exactly want[0 ..
 * n), each removed once read; how many did. */
static int whole_temps(const char *dir, const char *keep, const char *want,
		       size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char prefix[256], p[1024];
	int whole = 0;

	ck_assert_ptr_nonnull(d);
	snprintf(prefix, sizeof prefix, ".%s.", keep);
	while ((e = readdir(d))) {
		size_t len;
		char *got;

		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		got = tp_test_read(p, &len);
		if (got && len == n && !memcmp(got, want, n))
			whole++;
		free(got);
		unlink(p);
	}
	closedir(d);
	return whole;
}

/* SIGKILL during `plan -o` over an existing file: the old file stays,
 * byte for byte, and nothing else appears beside it. */
START_TEST(test_sigkill_plan_keeps_old_output)
{
	static const char old[] = "{\"old\": \"content\"}\n";
	const char *dir = tp_test_tmpdir();
	char out[512];
	const char *argv[] = {"tagplan", "plan", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), "-o", out,
			      "--time-limit", "30", "--playouts", "0", NULL};
	struct child ch;
	size_t len;
	char *now;
	int temps;

	snprintf(out, sizeof out, "%s/out.json", dir);
	ck_assert_int_eq(tp_test_write(out, old, strlen(old)), 0);
	child_start(&ch, argv);
	ck_assert_msg(child_wait_for(&ch, "best", 60), "%s", ch.seen);
	kill(ch.pid, SIGKILL);
	ck_assert_int_eq(child_wait(&ch, 30), 128 + SIGKILL);
	now = tp_test_read(out, &len);
	ck_assert_ptr_nonnull(now);
	ck_assert_uint_eq(len, strlen(old));
	ck_assert_str_eq(now, old);
	free(now);
	ck_assert_int_eq(stray_files(dir, "out.json", &temps), 0);
	ck_assert_int_eq(temps, 0);
}
END_TEST

/* SIGKILL in the middle of tp_file_write_atomic of a large file, at
 * several moments: the path holds the old content or the new, whole;
 * never a truncated file, and no temporary is left beside it: the writer
 * fills an unnamed O_TMPFILE file and names it only when complete.  A
 * named temporary exists between linkat and rename (Linux cannot link an
 * unnamed file over an existing name); a kill there, which a loaded
 * machine or a sanitizer build can hit, leaves that temporary beside the
 * target, and it must then be a whole copy of the new content, never a
 * partial one (whole_temps). */
START_TEST(test_sigkill_during_atomic_write)
{
	const size_t old_n = 1000, new_n = (size_t)48 << 20;
	static const int delays_ms[] = {1, 20, 60, 150, 400, 1500};
	const char *dir = tp_test_tmpdir();
	char path[512];
	char *oldbuf = malloc(old_n), *newbuf = malloc(new_n);
	int temps = 0;

	ck_assert(oldbuf && newbuf);
	memset(oldbuf, 'A', old_n);
	memset(newbuf, 'B', new_n);
	snprintf(path, sizeof path, "%s/out.json", dir);
	for (size_t i = 0; i < sizeof delays_ms / sizeof delays_ms[0]; i++) {
		size_t len;
		char *now;
		pid_t pid;
		bool is_old, is_new;

		ck_assert_int_eq(tp_test_write(path, oldbuf, old_n), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			struct tp_error err;

			for (;;)
				if (tp_file_write_atomic(path, newbuf, new_n,
							 &err))
					_exit(3);
		}
		msleep(delays_ms[i]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		now = tp_test_read(path, &len);
		ck_assert_ptr_nonnull(now);
		is_old = len == old_n && !memcmp(now, oldbuf, old_n);
		is_new = len == new_n && !memcmp(now, newbuf, new_n);
		ck_assert_msg(is_old || is_new,
			      "after SIGKILL at %d ms: %zu bytes, neither the "
			      "old file nor the new",
			      delays_ms[i], len);
		free(now);
		ck_assert_int_eq(stray_files(dir, "out.json", &temps), 0);
		ck_assert_msg(temps <= 1,
			      "after SIGKILL at %d ms: %d temporary files left",
			      delays_ms[i], temps);
		ck_assert_msg(whole_temps(dir, "out.json", newbuf, new_n) ==
				  temps,
			      "after SIGKILL at %d ms: a temporary file that "
			      "is not a whole copy of the new content",
			      delays_ms[i]);
	}
	free(oldbuf);
	free(newbuf);
	/* tens of MB: do not leave them in /tmp */
	{
		DIR *d = opendir(dir);
		struct dirent *e;
		char p[1024];

		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
				unlink(p);
			}
		if (d)
			closedir(d);
		rmdir(dir);
	}
}
END_TEST

/* ---- determinism and provenance ----------------------------------------- */

/* Run `plan` with a playout limit on one thread into out (exit 0). */
static void plan_to(const char *out, const char *model, const char *topo,
		    const char *seed)
{
	const char *argv[] = {"tagplan",   "plan",     "-m",         model,
			      "-t",        topo,       "-o",         out,
			      "--threads", "1",        "--seed",     seed,
			      "--playouts", "150",     "--time-limit", "0",
			      "-q",        NULL};
	struct tp_run r;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status, r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}

/* The text with the "timing" object (wall clock) cut out. */
static char *without_timing(const char *text)
{
	const char *a = strstr(text, "\"timing\"");
	const char *b = a ? strchr(a, '}') : NULL;
	char *r;

	ck_assert_msg(a && b, "no summary.search.timing");
	r = malloc(strlen(text) + 1);
	ck_assert_ptr_nonnull(r);
	memcpy(r, text, (size_t)(a - text));
	strcpy(r + (a - text), b + 1);
	ck_assert_ptr_null(strstr(r, "search_seconds"));
	return r;
}

START_TEST(test_plan_deterministic)
{
	const char *dir = tp_test_tmpdir();
	const char *model = tp_data_file("demo-model.json");
	const char *topo = tp_data_file("tag-testbed.json");
	char a[512], b[512], c[512];
	char *ta, *tb, *tc, *sa, *sb;

	snprintf(a, sizeof a, "%s/a.json", dir);
	snprintf(b, sizeof b, "%s/b.json", dir);
	snprintf(c, sizeof c, "%s/c.json", dir);
	plan_to(a, model, topo, "7");
	plan_to(b, model, topo, "7");
	plan_to(c, model, topo, "8");
	ta = tp_test_read(a, NULL);
	tb = tp_test_read(b, NULL);
	tc = tp_test_read(c, NULL);
	ck_assert(ta && tb && tc);
	sa = without_timing(ta);
	sb = without_timing(tb);
	ck_assert_msg(strcmp(sa, sb) == 0,
		      "two runs with seed 7 and --threads 1 differ");
	/* the seed is recorded, so another seed gives another file */
	ck_assert(strstr(ta, "\"seed\": 7") && strstr(tc, "\"seed\": 8"));
	free(ta);
	free(tb);
	free(tc);
	free(sa);
	free(sb);
}
END_TEST

/* The string value of "key": "..." in a JSON text (static buffer). */
static const char *json_string(const char *text, const char *key)
{
	static char val[256];
	char pat[128];
	const char *p, *e;

	snprintf(pat, sizeof pat, "\"%s\": \"", key);
	p = strstr(text, pat);
	ck_assert_msg(p != NULL, "no \"%s\" string", key);
	p += strlen(pat);
	e = strchr(p, '"');
	ck_assert_ptr_nonnull(e);
	ck_assert_int_lt(e - p, (long)sizeof val);
	memcpy(val, p, (size_t)(e - p));
	val[e - p] = '\0';
	return val;
}

/* The digest sha256sum(1) prints for path. */
static void sha256sum(const char *path, char hex[65])
{
	char cmd[4200];
	FILE *p;

	snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(fscanf(p, "%64s", hex), 1);
	pclose(p);
}

START_TEST(test_plan_provenance)
{
	const char *dir = tp_test_tmpdir();
	const char *model = tp_data_file("demo-model.json");
	const char *topo = tp_data_file("tag-testbed.json");
	const char *argv[] = {"tagplan", "--version", NULL};
	struct tp_run r;
	char out[512], hex[65];
	char *text;

	snprintf(out, sizeof out, "%s/p.json", dir);
	plan_to(out, model, topo, "1");
	text = tp_test_read(out, NULL);
	ck_assert_ptr_nonnull(text);
	tp_run_tagplan(&r, argv, NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(strstr(r.out, json_string(text, "tagplan_version")),
		      "--version says %s, the plan %s", r.out,
		      json_string(text, "tagplan_version"));
	tp_run_free(&r);
	sha256sum(model, hex);
	ck_assert_str_eq(json_string(text, "model_sha256"), hex);
	sha256sum(topo, hex);
	ck_assert_str_eq(json_string(text, "topology_sha256"), hex);
	ck_assert_str_eq(json_string(text, "model_file"), "demo-model.json");
	ck_assert_str_eq(json_string(text, "topology_file"),
			 "tag-testbed.json");
	free(text);
}
END_TEST

/* `check` warns when the model given is not the file the plan was made
 * from (same ops, so the plan still loads), and not otherwise. */
START_TEST(test_check_warns_other_inputs)
{
	const char *dir = tp_test_tmpdir();
	const char *model = tp_data_file("demo-model.json");
	const char *topo = tp_data_file("tag-testbed.json");
	char out[512], edited[512];
	char *text, *ed;
	size_t len;
	struct tp_run r;

	snprintf(out, sizeof out, "%s/p.json", dir);
	snprintf(edited, sizeof edited, "%s/model.json", dir);
	plan_to(out, model, topo, "1");
	{
		const char *argv[] = {"tagplan", "check", "-m", model, "-t",
				      topo, "-p", out, NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(!strstr(r.err, "differs"), "%s", r.err);
		tp_run_free(&r);
	}
	/* the same model with trailing blank lines: another file (another
	 * digest), the same graph */
	text = tp_test_read(model, &len);
	ck_assert_ptr_nonnull(text);
	ed = malloc(len + 8);
	ck_assert_ptr_nonnull(ed);
	memcpy(ed, text, len);
	strcpy(ed + len, "\n\n");
	ck_assert_int_eq(tp_test_write(edited, ed, strlen(ed)), 0);
	free(text);
	free(ed);
	{
		const char *argv[] = {"tagplan", "check", "-m", edited, "-t",
				      topo, "-p", out, NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.err, "warning") &&
				      strstr(r.err, "model differs from the one "
						    "the plan was made from"),
			      "no warning: %s", r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* --time-limit is a limit: with no playout limit the search stops by
 * itself, at the time limit (the summary says which limit stopped it),
 * using the time (the whole run lasts about the limit; it keeps a reserve
 * to score the answer) and finishing (generously: the machine may be
 * loaded and sanitized) within seconds of it.  How much of the limit the
 * search itself gets depends on the load (loading and the baselines come
 * out of the same limit), so it is bounded above only.  The accuracy
 * itself is measured, not tested: see bench/. */
START_TEST(test_time_limit_stops_search)
{
	char out[512], *text, *p;
	const char *argv[] = {"tagplan", "plan", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), "-o", out,
			      "--time-limit", "2", "--playouts", "0",
			      "--threads", "1", NULL};
	struct tp_run r;
	struct timespec t0, t1;
	double wall, searched;

	snprintf(out, sizeof out, "%s/p.json", tp_test_tmpdir());
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tp_run_tagplan(&r, argv, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	wall = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "stopped by     the time limit"),
		      "not stopped by the time limit: %s", r.err);
	tp_run_free(&r);
	text = tp_test_read(out, NULL);
	ck_assert_ptr_nonnull(text);
	p = strstr(text, "\"search_seconds\": ");
	ck_assert_ptr_nonnull(p);
	searched = strtod(p + strlen("\"search_seconds\": "), NULL);
	free(text);
	ck_assert_msg(searched > 0 && searched <= 2 * 1.5,
		      "searched %g s for --time-limit 2", searched);
	ck_assert_msg(wall >= 2 * 0.9, "the run ended after %g s of its 2",
		      wall);
	ck_assert_msg(wall < 2 + 25, "took %g s for --time-limit 2", wall);
}
END_TEST

Suite *suite_reliability(void)
{
	Suite *s = suite_create("reliability");
	TCase *tc = tcase_create("regress");

	tcase_add_test(tc, test_regress_replay);
	tcase_add_test(tc, test_shipped_runtimes_and_runs);
	tcase_add_test(tc, test_strategy_canonical_parses);
	tcase_add_test(tc, test_validate_refuses_what_simulate_refuses);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_limit_file_size);
	tcase_add_test(tc, test_limit_nesting_depth);
	tcase_add_test(tc, test_limit_devices);
	tcase_add_test(tc, test_limit_route_tables);
	tcase_add_test(tc, test_limit_ops_of_built_models);
	tcase_add_test(tc, test_limit_strategy_numbers);
	tcase_add_test(tc, test_limit_search_tree_budget);
	suite_add_tcase(s, tc);

	/* Child processes running the search: slow under sanitizers. */
	tc = tcase_create("outputs");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_sigint_writes_best_plan);
	tcase_add_test(tc, test_sigterm_writes_best_plan);
	tcase_add_test(tc, test_train_second_sigint_stops);
	tcase_add_test(tc, test_sigkill_plan_keeps_old_output);
	tcase_add_test(tc, test_sigkill_during_atomic_write);
	tcase_add_test(tc, test_plan_deterministic);
	tcase_add_test(tc, test_plan_provenance);
	tcase_add_test(tc, test_check_warns_other_inputs);
	tcase_add_test(tc, test_time_limit_stops_search);
	suite_add_tcase(s, tc);
	return s;
}

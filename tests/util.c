#include "util.h"

#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/build.h"

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

static void append(char **buf, size_t *len, size_t *cap, const char *d,
		   size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = (*cap ? *cap : 4096);
		while (nc < *len + n + 1)
			nc *= 2;
		*buf = realloc(*buf, nc);
		ck_assert_ptr_nonnull(*buf);
		*cap = nc;
	}
	memcpy(*buf + *len, d, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void tp_run_tagplan(struct tp_run *r, const char *const *argv,
		    const char *stdin_data)
{
	const char *bin = env_or("TAGPLAN_BIN", "./tagplan");
	int in[2], out[2], err[2], st;
	size_t ocap = 0, ecap = 0, inlen = stdin_data ? strlen(stdin_data) : 0,
	       inoff = 0;
	pid_t pid;
	int n = 0;
	char **av;

	memset(r, 0, sizeof(*r));
	while (argv[n])
		n++;
	av = calloc((size_t)n + 1, sizeof(*av));
	ck_assert_ptr_nonnull(av);
	av[0] = (char *)bin;
	for (int i = 1; i < n; i++)
		av[i] = (char *)argv[i];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(pipe(err), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(in[1]);
		close(out[0]);
		close(err[0]);
		execv(bin, av);
		_exit(127);
	}
	free(av);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	signal(SIGPIPE, SIG_IGN);
	if (!inlen) {
		close(in[1]);
		in[1] = -1;
	}
	append(&r->out, &r->out_len, &ocap, "", 0);
	append(&r->err, &r->err_len, &ecap, "", 0);
	for (int open_fds = 2; open_fds > 0;) {
		struct pollfd p[3] = {{out[0], POLLIN, 0},
				      {err[0], POLLIN, 0},
				      {in[1], POLLOUT, 0}};
		char buf[65536];
		ssize_t k;
		if (poll(p, in[1] >= 0 ? 3 : 2, -1) < 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
				continue;
			k = read(p[i].fd, buf, sizeof(buf));
			if (k <= 0) {
				close(p[i].fd);
				if (i == 0)
					out[0] = -1;
				else
					err[0] = -1;
				open_fds--;
			} else if (i == 0) {
				append(&r->out, &r->out_len, &ocap, buf,
				       (size_t)k);
			} else {
				append(&r->err, &r->err_len, &ecap, buf,
				       (size_t)k);
			}
		}
		if (in[1] >= 0 && (p[2].revents & (POLLOUT | POLLERR))) {
			k = write(in[1], stdin_data + inoff, inlen - inoff);
			if (k > 0)
				inoff += (size_t)k;
			if (k <= 0 || inoff == inlen) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (out[0] < 0 && err[0] < 0)
			break;
	}
	if (in[1] >= 0)
		close(in[1]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void tp_run_free(struct tp_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

static const char *rotate(const char *base, const char *rel)
{
	static char bufs[8][1024];
	static int k;
	char *b = bufs[k++ & 7];

	snprintf(b, 1024, "%s/%s", base, rel);
	return b;
}

const char *tp_test_path(const char *rel)
{
	return rotate(env_or("TAGPLAN_TESTS", "tests"), rel);
}

const char *tp_data_file(const char *rel)
{
	return rotate(env_or("TAGPLAN_DATA", "data"), rel);
}

const char *tp_test_tmpdir(void)
{
	static char dir[256];

	snprintf(dir, sizeof(dir), "/tmp/tagplan-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

void tp_test_expect(const char *const *argv, int status, const char *want,
		    const char *unwanted)
{
	struct tp_run r;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == status, "%s: exit %d, want %d: %s", argv[1],
		      r.status, status, r.err);
	ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	ck_assert_msg(!unwanted || !strstr(r.err, unwanted), "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}

char *tp_test_squeeze(char *s)
{
	size_t o = 0;

	for (size_t i = 0; s[i]; i++)
		if (!isspace((unsigned char)s[i]))
			s[o++] = s[i];
		else if (o && s[o - 1] != ' ')
			s[o++] = ' ';
	s[o] = '\0';
	return s;
}

char *tp_test_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, k;
	char tmp[65536];

	if (!f)
		return NULL;
	while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
		append(&buf, &n, &cap, tmp, k);
	fclose(f);
	if (!buf)
		append(&buf, &n, &cap, "", 0);
	if (len)
		*len = n;
	return buf;
}

int tp_test_write(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

const struct tp_route *tp_test_route(const struct tp_cluster *c, uint32_t a,
				     uint32_t b)
{
	static struct tp_route ring[8];
	static unsigned next;
	struct tp_route *r = &ring[next++ % 8];

	tp_cluster_route(c, a, b, r);
	return r;
}

struct tp_device_type tp_test_toy_type(const char *name)
{
	struct tp_device_type t;

	memset(&t, 0, sizeof(t));
	t.name = name;
	t.peak_flops[TP_DTYPE_FP32] = 10e12;
	t.peak_flops[TP_DTYPE_FP16] = 100e12;
	t.peak_flops[TP_DTYPE_BF16] = 100e12;
	t.memory_bytes = 80e9;
	t.memory_bw_Bps = 1e12;
	t.gemm_efficiency = 1.0;
	t.gemm_half_flop = 1e-9; /* flat curve: exactly peak */
	t.memory_efficiency = 1.0;
	return t;
}

void tp_test_toy_node(struct tp_cluster *c, const struct tp_device_type *t,
		      uint32_t gpus)
{
	struct tp_error err;
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, t, &ty, &err), TP_OK);
	ck_assert_int_eq(
	    tp_cluster_build_node(c,
				  &(struct tp_node_build){"node0", ty, gpus,
							  TP_LINK_NVSWITCH,
							  100e9, 0, 0, 0, 0,
							  false},
				  NULL, &err),
	    TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

void tp_test_chain_model(struct tp_model *m, const struct tp_test_chain *s)
{
	struct tp_error err;
	uint32_t prev = TP_NONE;

	tp_model_init(m);
	m->global_batch = s->batch;
	m->dtype = s->dtype;
	m->optimizer = TP_OPT_ADAM;
	for (uint32_t i = 0; i < s->n; i++) {
		struct tp_op op = tp_op_default();
		char name[32];
		uint32_t idx;
		snprintf(name, sizeof(name), "op%u", i);
		op.name = name;
		op.kind = TP_OP_MATMUL;
		op.layer = (int32_t)i;
		op.flop = s->flop;
		op.backward_flop = 2 * s->flop;
		op.param_bytes = s->pbytes;
		op.out_bytes = s->out;
		op.saved_bytes = s->saved;
		ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
		if (prev != TP_NONE)
			ck_assert_int_eq(
				tp_model_add_edge(m, prev, idx, s->edge, &err),
				TP_OK);
		prev = idx;
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

void tp_test_moe_layer(struct tp_model *m, uint32_t E, int64_t batch,
		       double pbytes)
{
	struct tp_error err;
	struct tp_op op;
	uint32_t router, comb, ex[16];

	ck_assert_uint_le(E, 16);
	tp_model_init(m);
	m->global_batch = batch;
	m->dtype = TP_DTYPE_BF16;
	m->optimizer = TP_OPT_ADAM;
	m->arch.experts = E;
	m->arch.top_k = 2;
	op = tp_op_default();
	op.name = "layer0.router";
	op.kind = TP_OP_ELEMENTWISE;
	op.layer = 0;
	ck_assert_int_eq(tp_model_add_op(m, &op, &router, &err), TP_OK);
	for (uint32_t j = 0; j < E; j++) {
		char name[32];
		snprintf(name, sizeof(name), "layer0.expert%u.fc", j);
		op = tp_op_default();
		op.name = name;
		op.kind = TP_OP_MATMUL;
		op.layer = 0;
		op.flop = 1e11;
		op.backward_flop = 2e11;
		op.param_bytes = pbytes;
		op.saved_bytes = 1e7;
		op.out_bytes = 1e8;
		ck_assert_int_eq(tp_model_add_op(m, &op, &ex[j], &err), TP_OK);
		ck_assert_int_eq(tp_model_add_edge(m, router, ex[j], 1e8, &err),
				 TP_OK);
	}
	op = tp_op_default();
	op.name = "layer0.combine";
	op.kind = TP_OP_ELEMENTWISE;
	op.layer = 0;
	ck_assert_int_eq(tp_model_add_op(m, &op, &comb, &err), TP_OK);
	for (uint32_t j = 0; j < E; j++)
		ck_assert_int_eq(tp_model_add_edge(m, ex[j], comb, 1e8, &err),
				 TP_OK);
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

void tp_test_attn_model(struct tp_model *m, int64_t batch, double pbytes)
{
	struct tp_error err;
	struct tp_op op = tp_op_default();
	uint32_t a, b;

	tp_model_init(m);
	m->global_batch = batch;
	m->seq_len = 4;
	m->dtype = TP_DTYPE_BF16;
	m->optimizer = TP_OPT_ADAM;
	op.name = "qkv";
	op.kind = TP_OP_MATMUL;
	op.layer = 0;
	op.flop = 1e12;
	op.backward_flop = 2e12;
	op.param_bytes = pbytes;
	op.saved_bytes = 1e9;
	ck_assert_int_eq(tp_model_add_op(m, &op, &a, &err), TP_OK);
	op = tp_op_default();
	op.name = "attn";
	op.kind = TP_OP_ATTENTION;
	op.layer = 0;
	op.flop = 1e12;
	op.backward_flop = 2e12;
	op.saved_bytes = 1e9;
	ck_assert_int_eq(tp_model_add_op(m, &op, &b, &err), TP_OK);
	ck_assert_int_eq(tp_model_add_edge(m, a, b, 3e9, &err), TP_OK);
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

void tp_test_gpt12(struct tp_model *m, struct tp_cluster *c,
		   const char *const *specs, int n_specs)
{
	struct tp_gpt_dims d;
	struct tp_error err;

	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
	memset(&d, 0, sizeof(d));
	d.hidden = 1024;
	d.layers = 12;
	d.heads = 16;
	d.seq = 1024;
	d.vocab = 32000;
	d.batch = 64;
	d.dtype = TP_DTYPE_BF16;
	d.name = "gpt-12";
	tp_model_init(m);
	tp_cluster_init(c);
	ck_assert_int_eq(tp_build_gpt(&d, m, &err), TP_OK);
	ck_assert_msg(tp_build_topology(specs, n_specs, "ib-hdr", 1, c,
					&err) == TP_OK,
		      "%s", err.msg);
}

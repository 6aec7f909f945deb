/*
 * build_zoo.c - the model zoo: torchvision's CNNs (ResNet-50/101, VGG-16/19,
 * Inception-v3, MobileNet-v2) layer by layer, and named transformers (the
 * original Transformer, BERT-large, GPT-3 1.3B/13B/175B) through the
 * transformer builder.
 *
 * CNNs: one op per conv, batch norm, ReLU, pool, residual add, concat,
 * dropout and fully connected layer, named as torchvision names the
 * modules; "layer" is the stage (stem 0, then one per resolution stage,
 * head last).  FLOP = 2 x multiply-adds (torchvision's "GFLOPS" and thop's
 * "MACs" count a multiply-add as one operation: our conv + fc FLOP are
 * exactly twice their figures); batch norm, activations, pools and adds
 * get a few FLOP per element, which torchvision does not count (about 1%
 * more).  Parameters are torchvision's num_params (BatchNorm running
 * statistics are buffers, not parameters).  Saved activations: a conv, a
 * batch norm and an fc keep their input, a max pool its input and int64
 * indices, a dropout its 1-byte mask, the loss its fp32 probabilities;
 * ReLU keeps nothing of its own (its output is its consumer's saved
 * input, the same buffer in PyTorch).
 */
#include "build.h"

#include <stdio.h>
#include <string.h>

#include "build_int.h"
#include "io_int.h"

/* A tensor flowing through the CNN: the op producing it and its shape. */
struct ten {
	uint32_t op;
	double c, h, w;
};

struct cnn {
	struct tp_gb g;
	int32_t layer;
	char prefix[96];
};

static double elems(struct ten t)
{
	return t.c * t.h * t.w;
}

static struct tp_gb_op cop(enum tp_op_kind kind, enum tp_tp_split split,
			   uint32_t units, int32_t layer)
{
	struct tp_gb_op o;

	memset(&o, 0, sizeof(o));
	o.kind = kind;
	o.split = split;
	o.units = units;
	o.layer = layer;
	o.backward_flop = -1;
	return o;
}

static struct ten add(struct cnn *n, const char *name, struct tp_gb_op *o,
		      struct ten in, struct ten out)
{
	uint32_t idx = tp_gb_op(&n->g, n->prefix, name, o);

	if (in.op != TP_NONE)
		tp_gb_edge(&n->g, in.op, idx, n->g.e * elems(in));
	out.op = idx;
	return out;
}

/* A convolution's window: kh x kw, stride s, padding ph/pw. */
struct window {
	int kh, kw, s, ph, pw;
};

static struct window win(int kh, int kw, int s, int ph, int pw)
{
	return (struct window){kh, kw, s, ph, pw};
}

/* Convolution over the window k, groups g. */
static struct ten conv(struct cnn *n, const char *name, struct ten in,
		       double cout, struct window k, double groups, bool bias)
{
	double e = n->g.e;
	int kh = k.kh, kw = k.kw;
	struct ten out = {TP_NONE, cout,
			  (double)(((int)in.h + 2 * k.ph - kh) / k.s + 1),
			  (double)(((int)in.w + 2 * k.pw - kw) / k.s + 1)};
	double macs = kh * kw * (in.c / groups) * cout * out.h * out.w;
	bool depthwise = groups > 1 && groups == in.c;
	struct tp_gb_op o = cop(TP_OP_CONV,
				depthwise ? TP_SPLIT_SHARDED : TP_SPLIT_COLUMN,
				(uint32_t)cout, n->layer);

	o.flop = 2 * macs;
	o.params = kh * kw * (in.c / groups) * cout + (bias ? cout : 0);
	o.out_bytes = e * elems(out);
	o.saved_bytes = e * elems(in);
	o.mem_bytes = e * (elems(in) + elems(out));
	return add(n, name, &o, in, out);
}

static struct ten bn(struct cnn *n, const char *name, struct ten in)
{
	double e = n->g.e;
	struct tp_gb_op o = cop(TP_OP_NORM, TP_SPLIT_NONE, 0, n->layer);

	o.params = 2 * in.c;
	o.flop = 5 * elems(in); /* statistics, normalise, scale and shift */
	o.out_bytes = e * elems(in);
	o.saved_bytes = e * elems(in);
	/* three passes: the batch statistics read the input, then the
	 * normalisation reads it again and writes the output (io README 8) */
	o.mem_bytes = 3 * e * elems(in);
	return add(n, name, &o, in, in);
}

static struct ten relu(struct cnn *n, const char *name, struct ten in)
{
	double e = n->g.e;
	struct tp_gb_op o = cop(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, n->layer);

	o.flop = elems(in);
	o.out_bytes = e * elems(in);
	o.mem_bytes = 2 * e * elems(in);
	return add(n, name, &o, in, in);
}

/* Max (max = true) or average pool k x k, stride s, padding p. */
static struct ten pool(struct cnn *n, const char *name, struct ten in, int k,
		       int s, int p, bool max)
{
	double e = n->g.e;
	struct ten out = {TP_NONE, in.c,
			  (double)(((int)in.h + 2 * p - k) / s + 1),
			  (double)(((int)in.w + 2 * p - k) / s + 1)};
	struct tp_gb_op o = cop(TP_OP_POOL, TP_SPLIT_NONE, 0, n->layer);

	o.flop = (double)k * k * elems(out);
	o.out_bytes = e * elems(out);
	o.saved_bytes = max ? e * elems(in) + 8 * elems(out) : 0;
	o.mem_bytes = e * (elems(in) + elems(out));
	return add(n, name, &o, in, out);
}

/* Global average pool to 1 x 1. */
static struct ten gap(struct cnn *n, const char *name, struct ten in)
{
	double e = n->g.e;
	struct ten out = {TP_NONE, in.c, 1, 1};
	struct tp_gb_op o = cop(TP_OP_POOL, TP_SPLIT_NONE, 0, n->layer);

	o.flop = elems(in);
	o.out_bytes = e * in.c;
	o.mem_bytes = e * (elems(in) + in.c);
	return add(n, name, &o, in, out);
}

static struct ten fc(struct cnn *n, const char *name, struct ten in,
		     double out_features)
{
	double e = n->g.e, fin = elems(in);
	struct ten out = {TP_NONE, out_features, 1, 1};
	struct tp_gb_op o = cop(TP_OP_MATMUL, TP_SPLIT_COLUMN,
				(uint32_t)out_features, n->layer);

	o.flop = 2 * fin * out_features;
	o.params = fin * out_features + out_features;
	o.out_bytes = e * out_features;
	o.saved_bytes = e * fin;
	o.mem_bytes = e * (fin + out_features);
	return add(n, name, &o, in, out);
}

static struct ten dropout(struct cnn *n, const char *name, struct ten in)
{
	double e = n->g.e;
	struct tp_gb_op o = cop(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, n->layer);

	o.flop = elems(in);
	o.out_bytes = e * elems(in);
	o.saved_bytes = elems(in); /* 1-byte mask */
	o.mem_bytes = (2 * e + 1) * elems(in);
	return add(n, name, &o, in, in);
}

/* Residual add of a and b (same shape). */
static struct ten add2(struct cnn *n, const char *name, struct ten a,
		       struct ten b)
{
	double e = n->g.e;
	struct tp_gb_op o = cop(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, n->layer);
	struct ten out = a;

	o.flop = elems(a);
	o.out_bytes = e * elems(a);
	o.mem_bytes = 3 * e * elems(a);
	out = add(n, name, &o, a, out);
	tp_gb_edge(&n->g, b.op, out.op, e * elems(b));
	return out;
}

/* Channel concatenation of k tensors of equal spatial size. */
static struct ten concat(struct cnn *n, const char *name, const struct ten *t,
			 int k)
{
	double e = n->g.e, c = 0;
	struct tp_gb_op o = cop(TP_OP_OTHER, TP_SPLIT_NONE, 0, n->layer);
	struct ten out;
	uint32_t idx;

	for (int i = 0; i < k; i++)
		c += t[i].c;
	out = (struct ten){TP_NONE, c, t[0].h, t[0].w};
	o.out_bytes = e * elems(out);
	o.mem_bytes = 2 * e * elems(out);
	idx = tp_gb_op(&n->g, n->prefix, name, &o);
	for (int i = 0; i < k; i++)
		tp_gb_edge(&n->g, t[i].op, idx, e * elems(t[i]));
	out.op = idx;
	return out;
}

static void loss(struct cnn *n, const char *name, struct ten in)
{
	struct tp_gb_op o = cop(TP_OP_LOSS, TP_SPLIT_NONE, 0, n->layer);

	o.flop = 5 * in.c;
	o.out_bytes = 4;
	o.saved_bytes = 4 * in.c;
	o.mem_bytes = n->g.e * in.c + 4 * in.c;
	add(n, name, &o, in, (struct ten){TP_NONE, 1, 1, 1});
}

static void set_prefix(struct cnn *n, const char *p)
{
	snprintf(n->prefix, sizeof(n->prefix), "%s", p);
}

/* conv (no bias) + batch norm (+ ReLU): "<p>conv<i>", "<p>bn<i>",
 * "<p>relu<i>". */
static struct ten cbr(struct cnn *n, const char *tag, struct ten x, double c,
		      struct window k, bool act)
{
	char a[48], b[48], r[48];

	snprintf(a, sizeof(a), "%sconv", tag);
	snprintf(b, sizeof(b), "%sbn", tag);
	snprintf(r, sizeof(r), "%srelu", tag);
	x = conv(n, a, x, c, k, 1, false);
	x = bn(n, b, x);
	return act ? relu(n, r, x) : x;
}

static const struct ten input_224 = {TP_NONE, 3, 224, 224};

/* torchvision ResNet (v1.5: stride on the 3x3 conv) with Bottleneck
 * blocks. */
static void build_resnet(struct cnn *n, const int blocks[4])
{
	struct ten x = input_224;
	double planes = 64;

	n->layer = 0;
	n->prefix[0] = '\0';
	x = conv(n, "conv1", x, 64, win(7, 7, 2, 3, 3), 1, false);
	x = bn(n, "bn1", x);
	x = relu(n, "relu", x);
	x = pool(n, "maxpool", x, 3, 2, 1, true);
	for (int st = 0; st < 4; st++, planes *= 2) {
		n->layer = st + 1;
		for (int b = 0; b < blocks[st]; b++) {
			int stride = (st > 0 && b == 0) ? 2 : 1;
			struct ten id = x, y;
			char p[32];
			snprintf(p, sizeof(p), "layer%d.%d.", st + 1, b);
			set_prefix(n, p);
			y = conv(n, "conv1", x, planes, win(1, 1, 1, 0, 0), 1,
				 false);
			y = bn(n, "bn1", y);
			y = relu(n, "relu1", y);
			y = conv(n, "conv2", y, planes,
				 win(3, 3, stride, 1, 1), 1, false);
			y = bn(n, "bn2", y);
			y = relu(n, "relu2", y);
			y = conv(n, "conv3", y, planes * 4,
				 win(1, 1, 1, 0, 0), 1, false);
			y = bn(n, "bn3", y);
			if (b == 0) {
				id = conv(n, "downsample.0", x, planes * 4,
					  win(1, 1, stride, 0, 0), 1, false);
				id = bn(n, "downsample.1", id);
			}
			y = add2(n, "add", y, id);
			x = relu(n, "relu3", y);
		}
	}
	n->layer = 5;
	n->prefix[0] = '\0';
	x = gap(n, "avgpool", x);
	x = fc(n, "fc", x, 1000);
	loss(n, "loss", x);
}

/* torchvision VGG (no batch norm), configuration D (16) or E (19). */
static void build_vgg(struct cnn *n, int depth)
{
	static const int cfg16[] = {64,  64,  0,   128, 128, 0,   256,
				    256, 256, 0,   512, 512, 512, 0,
				    512, 512, 512, 0,   -1};
	static const int cfg19[] = {64,  64,  0,   128, 128, 0,   256, 256,
				    256, 256, 0,   512, 512, 512, 512, 0,
				    512, 512, 512, 512, 0,   -1};
	const int *cfg = depth == 16 ? cfg16 : cfg19;
	struct ten x = input_224;
	int idx = 0;
	char name[32];

	n->layer = 0;
	for (int i = 0; cfg[i] >= 0; i++) {
		if (cfg[i] == 0) {
			snprintf(name, sizeof(name), "features.%d", idx++);
			x = pool(n, name, x, 2, 2, 0, true);
			n->layer++;
			continue;
		}
		snprintf(name, sizeof(name), "features.%d", idx++);
		x = conv(n, name, x, cfg[i], win(3, 3, 1, 1, 1), 1, true);
		snprintf(name, sizeof(name), "features.%d", idx++);
		x = relu(n, name, x);
	}
	/* adaptive average pool to 7x7: the identity at 224x224 */
	x = pool(n, "avgpool", x, 1, 1, 0, false);
	x = fc(n, "classifier.0", x, 4096);
	x = relu(n, "classifier.1", x);
	x = dropout(n, "classifier.2", x);
	x = fc(n, "classifier.3", x, 4096);
	x = relu(n, "classifier.4", x);
	x = dropout(n, "classifier.5", x);
	x = fc(n, "classifier.6", x, 1000);
	loss(n, "loss", x);
}

/* Inception-v3 building blocks (torchvision's BasicConv2d = conv without
 * bias, batch norm, ReLU).  tag is "<module>.<branch>." */
static struct ten bc(struct cnn *n, const char *module, const char *branch,
		     struct ten x, double c, struct window k)
{
	char tag[96];

	snprintf(tag, sizeof(tag), "%s.%s.", module, branch);
	return cbr(n, tag, x, c, k, true);
}

static struct ten pool_named(struct cnn *n, const char *module,
			     const char *what, struct ten x, int k, int s,
			     int p, bool max)
{
	char name[96];

	snprintf(name, sizeof(name), "%s.%s", module, what);
	return pool(n, name, x, k, s, p, max);
}

static struct ten cat_named(struct cnn *n, const char *module,
			    const struct ten *t, int k)
{
	char name[96];

	snprintf(name, sizeof(name), "%s.concat", module);
	return concat(n, name, t, k);
}

static struct ten inc_a(struct cnn *n, const char *m, struct ten x, double pf)
{
	struct ten b[4], t;

	b[0] = bc(n, m, "branch1x1", x, 64, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch5x5_1", x, 48, win(1, 1, 1, 0, 0));
	b[1] = bc(n, m, "branch5x5_2", t, 64, win(5, 5, 1, 2, 2));
	t = bc(n, m, "branch3x3dbl_1", x, 64, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch3x3dbl_2", t, 96, win(3, 3, 1, 1, 1));
	b[2] = bc(n, m, "branch3x3dbl_3", t, 96, win(3, 3, 1, 1, 1));
	t = pool_named(n, m, "branch_pool.avgpool", x, 3, 1, 1, false);
	b[3] = bc(n, m, "branch_pool", t, pf, win(1, 1, 1, 0, 0));
	return cat_named(n, m, b, 4);
}

static struct ten inc_b(struct cnn *n, const char *m, struct ten x)
{
	struct ten b[3], t;

	b[0] = bc(n, m, "branch3x3", x, 384, win(3, 3, 2, 0, 0));
	t = bc(n, m, "branch3x3dbl_1", x, 64, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch3x3dbl_2", t, 96, win(3, 3, 1, 1, 1));
	b[1] = bc(n, m, "branch3x3dbl_3", t, 96, win(3, 3, 2, 0, 0));
	b[2] = pool_named(n, m, "branch_pool", x, 3, 2, 0, true);
	return cat_named(n, m, b, 3);
}

static struct ten inc_c(struct cnn *n, const char *m, struct ten x, double c7)
{
	struct ten b[4], t;

	b[0] = bc(n, m, "branch1x1", x, 192, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch7x7_1", x, c7, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch7x7_2", t, c7, win(1, 7, 1, 0, 3));
	b[1] = bc(n, m, "branch7x7_3", t, 192, win(7, 1, 1, 3, 0));
	t = bc(n, m, "branch7x7dbl_1", x, c7, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch7x7dbl_2", t, c7, win(7, 1, 1, 3, 0));
	t = bc(n, m, "branch7x7dbl_3", t, c7, win(1, 7, 1, 0, 3));
	t = bc(n, m, "branch7x7dbl_4", t, c7, win(7, 1, 1, 3, 0));
	b[2] = bc(n, m, "branch7x7dbl_5", t, 192, win(1, 7, 1, 0, 3));
	t = pool_named(n, m, "branch_pool.avgpool", x, 3, 1, 1, false);
	b[3] = bc(n, m, "branch_pool", t, 192, win(1, 1, 1, 0, 0));
	return cat_named(n, m, b, 4);
}

static struct ten inc_d(struct cnn *n, const char *m, struct ten x)
{
	struct ten b[3], t;

	t = bc(n, m, "branch3x3_1", x, 192, win(1, 1, 1, 0, 0));
	b[0] = bc(n, m, "branch3x3_2", t, 320, win(3, 3, 2, 0, 0));
	t = bc(n, m, "branch7x7x3_1", x, 192, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch7x7x3_2", t, 192, win(1, 7, 1, 0, 3));
	t = bc(n, m, "branch7x7x3_3", t, 192, win(7, 1, 1, 3, 0));
	b[1] = bc(n, m, "branch7x7x3_4", t, 192, win(3, 3, 2, 0, 0));
	b[2] = pool_named(n, m, "branch_pool", x, 3, 2, 0, true);
	return cat_named(n, m, b, 3);
}

static struct ten inc_e(struct cnn *n, const char *m, struct ten x)
{
	struct ten b[6], t, u;

	b[0] = bc(n, m, "branch1x1", x, 320, win(1, 1, 1, 0, 0));
	t = bc(n, m, "branch3x3_1", x, 384, win(1, 1, 1, 0, 0));
	b[1] = bc(n, m, "branch3x3_2a", t, 384, win(1, 3, 1, 0, 1));
	b[2] = bc(n, m, "branch3x3_2b", t, 384, win(3, 1, 1, 1, 0));
	u = bc(n, m, "branch3x3dbl_1", x, 448, win(1, 1, 1, 0, 0));
	u = bc(n, m, "branch3x3dbl_2", u, 384, win(3, 3, 1, 1, 1));
	b[3] = bc(n, m, "branch3x3dbl_3a", u, 384, win(1, 3, 1, 0, 1));
	b[4] = bc(n, m, "branch3x3dbl_3b", u, 384, win(3, 1, 1, 1, 0));
	t = pool_named(n, m, "branch_pool.avgpool", x, 3, 1, 1, false);
	b[5] = bc(n, m, "branch_pool", t, 192, win(1, 1, 1, 0, 0));
	return cat_named(n, m, b, 6);
}

/* torchvision inception_v3 (299x299 input) with the auxiliary classifier
 * of training mode. */
static void build_inception(struct cnn *n)
{
	struct ten x = {TP_NONE, 3, 299, 299}, aux;

	n->layer = 0;
	n->prefix[0] = '\0';
	x = cbr(n, "Conv2d_1a_3x3.", x, 32, win(3, 3, 2, 0, 0), true);
	x = cbr(n, "Conv2d_2a_3x3.", x, 32, win(3, 3, 1, 0, 0), true);
	x = cbr(n, "Conv2d_2b_3x3.", x, 64, win(3, 3, 1, 1, 1), true);
	x = pool(n, "maxpool1", x, 3, 2, 0, true);
	x = cbr(n, "Conv2d_3b_1x1.", x, 80, win(1, 1, 1, 0, 0), true);
	x = cbr(n, "Conv2d_4a_3x3.", x, 192, win(3, 3, 1, 0, 0), true);
	x = pool(n, "maxpool2", x, 3, 2, 0, true);
	n->layer = 1;
	x = inc_a(n, "Mixed_5b", x, 32);
	x = inc_a(n, "Mixed_5c", x, 64);
	x = inc_a(n, "Mixed_5d", x, 64);
	n->layer = 2;
	x = inc_b(n, "Mixed_6a", x);
	x = inc_c(n, "Mixed_6b", x, 128);
	x = inc_c(n, "Mixed_6c", x, 160);
	x = inc_c(n, "Mixed_6d", x, 160);
	x = inc_c(n, "Mixed_6e", x, 192);
	/* auxiliary classifier (training only) */
	aux = pool(n, "AuxLogits.avgpool", x, 5, 3, 0, false);
	aux = cbr(n, "AuxLogits.conv0.", aux, 128, win(1, 1, 1, 0, 0), true);
	aux = cbr(n, "AuxLogits.conv1.", aux, 768, win(5, 5, 1, 0, 0), true);
	aux = gap(n, "AuxLogits.adaptive_avgpool", aux);
	aux = fc(n, "AuxLogits.fc", aux, 1000);
	loss(n, "aux_loss", aux);
	n->layer = 3;
	x = inc_d(n, "Mixed_7a", x);
	x = inc_e(n, "Mixed_7b", x);
	x = inc_e(n, "Mixed_7c", x);
	n->layer = 4;
	x = gap(n, "avgpool", x);
	x = dropout(n, "dropout", x);
	x = fc(n, "fc", x, 1000);
	loss(n, "loss", x);
}

/* torchvision mobilenet_v2 (width 1.0): inverted residuals with ReLU6. */
static void build_mobilenet_v2(struct cnn *n)
{
	static const int cfg[7][4] = {{1, 16, 1, 1},  {6, 24, 2, 2},
				      {6, 32, 3, 2},  {6, 64, 4, 2},
				      {6, 96, 3, 1},  {6, 160, 3, 2},
				      {6, 320, 1, 1}};
	struct ten x = input_224;
	int f = 1;

	n->layer = 0;
	n->prefix[0] = '\0';
	x = conv(n, "features.0.0", x, 32, win(3, 3, 2, 1, 1), 1, false);
	x = bn(n, "features.0.1", x);
	x = relu(n, "features.0.2", x);
	for (int st = 0; st < 7; st++) {
		n->layer = st + 1;
		for (int i = 0; i < cfg[st][2]; i++, f++) {
			int stride = i == 0 ? cfg[st][3] : 1;
			double hidden = x.c * cfg[st][0];
			struct ten in = x, y = x;
			int k = 0;
			char name[48];
			snprintf(name, sizeof(name), "features.%d.conv.", f);
			set_prefix(n, name);
			if (cfg[st][0] != 1) {
				y = conv(n, "0.0", y, hidden,
					 win(1, 1, 1, 0, 0), 1, false);
				y = bn(n, "0.1", y);
				y = relu(n, "0.2", y);
				k = 1;
			}
			snprintf(name, sizeof(name), "%d.0", k);
			y = conv(n, name, y, hidden, win(3, 3, stride, 1, 1),
				 hidden, false);
			snprintf(name, sizeof(name), "%d.1", k);
			y = bn(n, name, y);
			snprintf(name, sizeof(name), "%d.2", k);
			y = relu(n, name, y);
			snprintf(name, sizeof(name), "%d", k + 1);
			y = conv(n, name, y, cfg[st][1], win(1, 1, 1, 0, 0), 1,
				 false);
			snprintf(name, sizeof(name), "%d", k + 2);
			y = bn(n, name, y);
			if (stride == 1 && in.c == cfg[st][1])
				y = add2(n, "add", y, in);
			x = y;
		}
	}
	n->layer = 8;
	snprintf(n->prefix, sizeof(n->prefix), "features.%d.", f);
	x = conv(n, "0", x, 1280, win(1, 1, 1, 0, 0), 1, false);
	x = bn(n, "1", x);
	x = relu(n, "2", x);
	n->prefix[0] = '\0';
	x = gap(n, "avgpool", x);
	x = dropout(n, "classifier.0", x);
	x = fc(n, "classifier.1", x, 1000);
	loss(n, "loss", x);
}

const char *const tp_zoo_names[] = {
	"resnet50",   "resnet101",  "vgg16",     "vgg19",
	"inception-v3", "mobilenet-v2", "transformer", "bert-large",
	"gpt3-1.3b",  "gpt3-13b",   "gpt3-175b", NULL};

static const char *const zoo_about[] = {
	"ResNet-50 (torchvision v1.5), 224x224, batch 256, fp32",
	"ResNet-101 (torchvision v1.5), 224x224, batch 256, fp32",
	"VGG-16 (torchvision, no batch norm), 224x224, batch 256, fp32",
	"VGG-19 (torchvision, no batch norm), 224x224, batch 256, fp32",
	"Inception-v3 (torchvision, with the auxiliary classifier), 299x299, "
	"batch 256, fp32",
	"MobileNet-v2 (torchvision), 224x224, batch 256, fp32",
	"Transformer base (Vaswani et al. 2017): 6+6 layers, d 512, 8 heads, "
	"ffn 2048, shared 37000-token vocabulary, 256+256 tokens, batch 128, "
	"fp32",
	"BERT-large pre-training (MLM + next sentence): 24 layers, h 1024, "
	"16 heads, seq 512, batch 256, fp32",
	"GPT-3 1.3B (Brown et al. 2020): 24 layers, h 2048, 16 heads, seq "
	"2048, vocab 50257, batch 512, bf16",
	"GPT-3 13B: 40 layers, h 5120, 40 heads, seq 2048, batch 1024, bf16",
	"GPT-3 175B: 96 layers, h 12288, 96 heads, seq 2048, batch 1536, bf16"};

const char *tp_zoo_about(const char *name)
{
	for (int i = 0; tp_zoo_names[i]; i++)
		if (strcmp(tp_zoo_names[i], name) == 0)
			return zoo_about[i];
	return NULL;
}

static enum tp_status build_cnn(int which, int64_t batch, int dtype,
				struct tp_model *m, struct tp_error *err)
{
	struct cnn n;
	static const int r50[4] = {3, 4, 6, 3}, r101[4] = {3, 4, 23, 3};

	memset(&n, 0, sizeof(n));
	m->dtype = dtype >= 0 ? (enum tp_dtype)dtype : TP_DTYPE_FP32;
	m->optimizer = TP_OPT_ADAM;
	m->global_batch = batch > 0 ? batch : 256;
	m->seq_len = 0;
	tp_gb_init(&n.g, m, err);
	tp_gb_name(&n.g, tp_zoo_names[which]);
	switch (which) {
	case 0:
	case 1:
		build_resnet(&n, which == 0 ? r50 : r101);
		snprintf(m->arch.family, sizeof(m->arch.family), "resnet");
		m->arch.layers = which == 0 ? 50 : 101;
		break;
	case 2:
	case 3:
		build_vgg(&n, which == 2 ? 16 : 19);
		snprintf(m->arch.family, sizeof(m->arch.family), "vgg");
		m->arch.layers = which == 2 ? 16 : 19;
		break;
	case 4:
		build_inception(&n);
		snprintf(m->arch.family, sizeof(m->arch.family), "inception");
		break;
	default:
		build_mobilenet_v2(&n);
		snprintf(m->arch.family, sizeof(m->arch.family), "mobilenet");
		break;
	}
	if (!n.g.st)
		n.g.st = tp_model_finalize(m, err);
	if (!n.g.st) /* what the loader would refuse is not written */
		n.g.st = tp_io_model_check_ranges(m, err);
	if (n.g.st) {
		tp_model_release(m);
		tp_model_init(m);
	}
	return n.g.st;
}

static void gpt3(struct tp_tf *t, const char *name, int64_t L, int64_t h,
		 int64_t a, int64_t batch)
{
	tp_tf_default(t);
	t->name = name;
	t->family = "gpt";
	t->layers = L;
	t->hidden = h;
	t->heads = a;
	t->ffn = 4 * h;
	t->seq = 2048;
	t->pos_embeddings = 2048;
	t->vocab = 50257;
	t->batch = batch;
}

enum tp_status tp_build_zoo(const char *name, int64_t batch, int dtype,
			    struct tp_model *m, struct tp_error *err)
{
	struct tp_tf t;
	int which = -1;

	for (int i = 0; tp_zoo_names[i]; i++)
		if (strcmp(tp_zoo_names[i], name) == 0)
			which = i;
	if (which < 0) {
		char list[512];
		size_t k = 0;
		list[0] = '\0';
		for (int i = 0; tp_zoo_names[i] && k < sizeof(list); i++) {
			int w = snprintf(list + k, sizeof(list) - k, "%s%s",
					 i ? ", " : "", tp_zoo_names[i]);
			if (w < 0)
				break;
			k += (size_t)w;
		}
		return tp_error_set(err, TP_EUSAGE,
				    "unknown model \"%s\"; the zoo has: %s "
				    "(or gpt, or hf:PATH/config.json)",
				    name, list);
	}
	if (batch < 0 || batch > ((int64_t)1 << 40))
		return tp_error_set(err, TP_EUSAGE,
				    "batch must be positive, not %lld",
				    (long long)batch);
	if (dtype >= TP_DTYPE_COUNT)
		return tp_error_set(err, TP_EUSAGE, "unknown dtype");
	if (which <= 5)
		return build_cnn(which, batch, dtype, m, err);
	switch (which) {
	case 6: /* Transformer base */
		tp_tf_default(&t);
		t.name = "transformer";
		t.family = "transformer";
		t.hidden = 512;
		t.heads = 8;
		t.ffn = 2048;
		t.layers = 6;
		t.dec_layers = 6;
		t.seq = 256;
		t.dec_seq = 256;
		t.vocab = 37000;
		t.batch = 128;
		t.norm_pos = TP_NORMPOS_POST;
		t.final_norm = false;
		t.act = TP_ACT_RELU;
		t.info.position = TP_POS_SINUSOIDAL;
		t.dtype = TP_DTYPE_FP32;
		break;
	case 7: /* BERT-large pre-training */
		tp_tf_default(&t);
		t.name = "bert-large";
		t.family = "bert";
		t.hidden = 1024;
		t.heads = 16;
		t.ffn = 4096;
		t.layers = 24;
		t.seq = 512;
		t.vocab = 30522;
		t.pos_embeddings = 512;
		t.type_vocab = 2;
		t.batch = 256;
		t.norm_pos = TP_NORMPOS_POST;
		t.embed_norm = true;
		t.final_norm = false;
		t.head = TP_TF_HEAD_PRETRAIN;
		t.info.norm_eps = 1e-12; /* BERT's released config */
		t.dtype = TP_DTYPE_FP32;
		break;
	case 8:
		gpt3(&t, "gpt3-1.3b", 24, 2048, 16, 512);
		break;
	case 9:
		gpt3(&t, "gpt3-13b", 40, 5120, 40, 1024);
		break;
	default:
		gpt3(&t, "gpt3-175b", 96, 12288, 96, 1536);
		break;
	}
	if (batch > 0)
		t.batch = batch;
	if (dtype >= 0)
		t.dtype = (enum tp_dtype)dtype;
	return tp_build_transformer(&t, m, err);
}

/*
 * presets.c - topology presets: node kinds ("dgx-a100", "v100-nvlink",
 * ...), networks ("ib-hdr", "25gbe", ...) and their composition
 * ("dgx-a100:4 --net ib-hdr"), plus named compositions ("tag-testbed").
 *
 * Every figure is per direction.  Sources: vendor spec sheets as
 * collected for data/devices.json (NVLink/NVSwitch rates per GPU
 * generation, PCIe x16 rates per generation, InfiniBand port rates and
 * latencies from the IBTA roadmap); figures marked ASSUMPTION below are
 * ours, typical values where no source figure was at hand.  The device
 * types themselves (peak FLOP/s, memory) come from data/devices.json
 * through tp_devices_load_builtin.  Summary: src/io/README section 8.
 */
#include "build.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "io_int.h"
#include "json.h"

/* PCIe x16, per direction (hardware table: 15.7 / 31.5 / 63 GB/s). */
#define PCIE3 15.7e9
#define PCIE4 31.5e9
#define PCIE5 63.0e9
/* ASSUMPTION: GPU to GPU through a PCIe switch or host bridge, one way,
 * hardware only (no NCCL software overhead). */
#define PCIE_LAT 1.0e-6
/* ASSUMPTION: GPU to GPU over NVLink or through NVSwitch, one way. */
#define NVLINK_LAT 0.3e-6
/* NVLink 2/3/4: 25 GB/s per link per direction (V100: 6 links = 150
 * GB/s, A100: 12 = 300, H100: 18 = 450); NVLink 1 (P100): 20 GB/s per
 * link (4 links = 80 GB/s). */
#define NVLINK_LINK 25e9
#define NVLINK1_LINK 20e9

struct network {
	const char *name;
	double bw_Bps; /* per NIC, per direction */
	double latency_s; /* device to device across the network, one way */
	const char *about;
};

static const struct network networks[] = {
	{"10gbe", 1.25e9, 15e-6,
	 "10 Gb/s Ethernet; latency 15 us ASSUMPTION (TCP sockets)"},
	{"25gbe", 3.125e9, 10e-6,
	 "25 Gb/s Ethernet; latency 10 us ASSUMPTION (TCP sockets)"},
	{"100gbe", 12.5e9, 5e-6,
	 "100 Gb/s Ethernet; latency 5 us ASSUMPTION (RoCE ~2 us, TCP ~10)"},
	{"ib-edr", 12.5e9, 0.5e-6,
	 "InfiniBand EDR 4x, 100 Gb/s; 0.5 us port latency (IBTA)"},
	{"ib-hdr", 25e9, 0.6e-6,
	 "InfiniBand HDR 4x, 200 Gb/s; 0.6 us port latency (IBTA)"},
	{"ib-ndr", 50e9, 0.6e-6,
	 "InfiniBand NDR 4x, 400 Gb/s; latency 0.6 us ASSUMPTION (HDR's)"},
	{"ib-xdr", 100e9, 0.6e-6,
	 "InfiniBand XDR 4x, 800 Gb/s (IBTA roadmap); latency 0.6 us "
	 "ASSUMPTION (HDR's)"},
	{"200gbe", 25e9, 2e-6,
	 "200 Gb/s Ethernet with RDMA (RoCE or HPE Slingshot-11); latency "
	 "2 us ASSUMPTION"},
	{"roce-400g", 50e9, 2e-6,
	 "RoCEv2 on 400 Gb/s Ethernet (400GbE = 50 GB/s); latency 2 us "
	 "ASSUMPTION (one switch hop with RDMA)"},
	{"gaudi2-roce", 37.5e9, 2e-6,
	 "Intel Gaudi 2 scale-out: 3 of its 24 integrated 100 GbE RoCE ports "
	 "per accelerator, 300 Gb/s (Gaudi 3 white paper); latency 2 us "
	 "ASSUMPTION"},
	{"gaudi3-roce", 75e9, 2e-6,
	 "Intel Gaudi 3 scale-out: 3 of its 24 integrated 200 GbE RoCE ports "
	 "per accelerator, 600 Gb/s (Gaudi 3 white paper); latency 2 us "
	 "ASSUMPTION"},
};

const char *const tp_network_names[] = {
	"10gbe",  "25gbe",     "100gbe",      "ib-edr",      "ib-hdr",
	"ib-ndr", "ib-xdr",    "200gbe",      "roce-400g",   "gaudi2-roce",
	"gaudi3-roce", NULL};

enum nvlink_layout {
	NVL_NONE,
	NVL_DGX1, /* 8 GPUs, hybrid cube mesh */
	NVL_QUAD, /* 4 GPUs, every pair joined by 2 links */
	NVL_PAIR, /* GPUs 2k and 2k+1 bridged: mesh_bw_Bps, NVLink */
	NVL_MESH  /* every pair joined: mesh_bw_Bps, mesh_kind */
};

struct node_preset {
	const char *name;
	const char *gpu;  /* device type name (data/devices.json) */
	uint32_t gpus;
	enum tp_link_kind fabric; /* NVSWITCH or PCIE */
	double fabric_bw_Bps;     /* per GPU, per direction */
	double fabric_latency_s;
	enum nvlink_layout nvlink;
	double pcie_Bps; /* the PCIe generation: caps GPU-NIC links */
	const char *net; /* default NIC kind */
	uint32_t nics;
	const char *about;
	double mesh_bw_Bps; /* NVL_PAIR, NVL_MESH: per pair, per direction */
	enum tp_link_kind mesh_kind;
	double mesh_latency_s;
};

/* NVLink 5 (B200, GB200): 18 links, 900 GB/s per GPU per direction
 * (hardware table: NVLink gen 5, 1,800 GB/s duplex; GB200 NVL72: 130 TB/s
 * over 72 GPUs). */
#define NVLINK5_GPU 900e9
/* The NICs are on the accelerator's die (Gaudi): no PCIe cap. */
#define NO_PCIE_CAP 1e15
/* ASSUMPTION: one hop over Infinity Fabric (MI250X, MI300X), like NVLink;
 * over a Gaudi scale-up RoCE port, 1 us. */
#define XGMI_LAT 0.3e-6
#define GAUDI_LAT 1.0e-6

static const struct node_preset presets[] = {
	{"dgx-a100", "A100-SXM4-80GB", 8, TP_LINK_NVSWITCH, 300e9, NVLINK_LAT,
	 NVL_NONE, PCIE4, "ib-hdr", 8,
	 "NVIDIA DGX A100: 8x A100-SXM4-80GB, NVSwitch 300 GB/s per GPU, 8x "
	 "HDR 200 Gb/s",
	 0, TP_LINK_NVLINK, 0},
	{"dgx-h100", "H100-SXM5-80GB", 8, TP_LINK_NVSWITCH, 450e9, NVLINK_LAT,
	 NVL_NONE, PCIE5, "ib-ndr", 8,
	 "NVIDIA DGX H100: 8x H100-SXM5-80GB, NVSwitch 450 GB/s per GPU, 8x "
	 "NDR 400 Gb/s",
	 0, TP_LINK_NVLINK, 0},
	{"hgx-h200", "H200-SXM-141GB", 8, TP_LINK_NVSWITCH, 450e9, NVLINK_LAT,
	 NVL_NONE, PCIE5, "ib-ndr", 8,
	 "HGX H200: 8x H200-SXM-141GB, NVSwitch 450 GB/s per GPU, 8x NDR 400 "
	 "Gb/s",
	 0, TP_LINK_NVLINK, 0},
	{"dgx1-v100", "V100-SXM2-16GB", 8, TP_LINK_PCIE, PCIE3, PCIE_LAT,
	 NVL_DGX1, PCIE3, "ib-edr", 4,
	 "NVIDIA DGX-1 (V100): 8x V100-SXM2-16GB, NVLink hybrid cube mesh "
	 "(25 GB/s per link, 1 or 2 links per pair), PCIe Gen3, 4x EDR 100 "
	 "Gb/s",
	 0, TP_LINK_NVLINK, 0},
	{"v100-nvlink", "V100-SXM2-32GB", 4, TP_LINK_PCIE, PCIE3, PCIE_LAT,
	 NVL_QUAD, PCIE3, "25gbe", 1,
	 "TAG testbed V100 server: 4x V100-SXM2-32GB, each pair joined by 2 "
	 "NVLinks (50 GB/s), PCIe Gen3, 1 NIC (25 GbE by default)",
	 0, TP_LINK_NVLINK, 0},
	{"p100-pcie", "P100-PCIe-12GB", 2, TP_LINK_PCIE, PCIE3, PCIE_LAT,
	 NVL_NONE, PCIE3, "25gbe", 1,
	 "TAG testbed P100 server: 2x P100-PCIe-12GB on PCIe Gen3, 1 NIC",
	 0, TP_LINK_NVLINK, 0},
	{"1080ti-pcie", "GTX-1080-Ti", 2, TP_LINK_PCIE, PCIE3, PCIE_LAT,
	 NVL_NONE, PCIE3, "25gbe", 1,
	 "TAG testbed 1080 Ti server: 2x GTX-1080-Ti on PCIe Gen3, 1 NIC",
	 0, TP_LINK_NVLINK, 0},
	{"t4-pcie", "T4-16GB", 4, TP_LINK_PCIE, PCIE3, PCIE_LAT, NVL_NONE,
	 PCIE3, "25gbe", 1,
	 "4x T4-16GB on PCIe Gen3, 1 NIC (ASSUMPTION: a g4dn.12xlarge-like "
	 "server)",
	 0, TP_LINK_NVLINK, 0},
	{"l4-pcie", "L4-24GB", 8, TP_LINK_PCIE, PCIE4, PCIE_LAT, NVL_NONE,
	 PCIE4, "100gbe", 1,
	 "8x L4-24GB on PCIe Gen4, 1 NIC (ASSUMPTION: a g6.48xlarge-like "
	 "server)",
	 0, TP_LINK_NVLINK, 0},
	{"a100-pcie", "A100-PCIe-80GB", 8, TP_LINK_PCIE, PCIE4, PCIE_LAT,
	 NVL_NONE, PCIE4, "ib-hdr", 1,
	 "8x A100-PCIe-80GB on PCIe Gen4 (no NVLink bridges), 1 NIC "
	 "(ASSUMPTION: one HDR port)",
	 0, TP_LINK_NVLINK, 0},
	{"dgx-b200", "B200-SXM-180GB", 8, TP_LINK_NVSWITCH, NVLINK5_GPU,
	 NVLINK_LAT, NVL_NONE, PCIE5, "ib-ndr", 8,
	 "NVIDIA DGX B200: 8x B200 (180 GB, DGX B200 datasheet), NVLink 5 "
	 "through NVSwitch, 900 GB/s per GPU per direction (14.4 TB/s total), "
	 "8x ConnectX-7 400 Gb/s",
	 0, TP_LINK_NVLINK, 0},
	{"gb200-nvl72", "GB200-186GB", 72, TP_LINK_NVSWITCH, NVLINK5_GPU,
	 NVLINK_LAT, NVL_NONE, PCIE5, "ib-ndr", 72,
	 "NVIDIA GB200 NVL72 rack as one 72-GPU NVLink domain (GB200 NVL72 "
	 "table: 130 TB/s NVLink, 900 GB/s per GPU per direction, 13.4 TB "
	 "HBM3e); one 400 Gb/s NIC per GPU (ASSUMPTION: ConnectX-7 per GPU as "
	 "in the DGX B200); the 36 Grace CPUs are not modelled",
	 0, TP_LINK_NVLINK, 0},
	{"h100-pcie", "H100-PCIe-80GB", 8, TP_LINK_PCIE, PCIE5, PCIE_LAT,
	 NVL_PAIR, PCIE5, "ib-ndr", 4,
	 "8x H100-PCIe-80GB on PCIe Gen5, pairs joined by NVLink bridges "
	 "(600 GB/s duplex, 300 per direction: H100 PCIe product brief); 4 "
	 "NDR NICs (ASSUMPTION: one per GPU pair)",
	 300e9, TP_LINK_NVLINK, NVLINK_LAT},
	{"h100-nvl", "H100-NVL-94GB", 8, TP_LINK_PCIE, PCIE5, PCIE_LAT,
	 NVL_PAIR, PCIE5, "ib-ndr", 4,
	 "8x H100 NVL (94 GB) on PCIe Gen5, pairs joined by NVLink bridges "
	 "(600 GB/s duplex, 300 per direction: H100 datasheet); 4 NDR NICs "
	 "(ASSUMPTION: one per GPU pair)",
	 300e9, TP_LINK_NVLINK, NVLINK_LAT},
	{"dgx-a100-40gb", "A100-SXM4-40GB", 8, TP_LINK_NVSWITCH, 300e9,
	 NVLINK_LAT, NVL_NONE, PCIE4, "ib-hdr", 8,
	 "NVIDIA DGX A100 320GB: 8x A100-SXM4-40GB, NVSwitch 300 GB/s per GPU, "
	 "8x HDR 200 Gb/s (DGX A100 datasheet)",
	 0, TP_LINK_NVLINK, 0},
	{"mi300x", "MI300X", 8, TP_LINK_PCIE, PCIE5, PCIE_LAT, NVL_MESH, PCIE5,
	 "roce-400g", 8,
	 "AMD Instinct MI300X platform: 8x MI300X fully connected by Infinity "
	 "Fabric, 64 GB/s per pair per direction (7 links x 128 GB/s duplex "
	 "= 448 GB/s per GPU; hardware table), PCIe Gen5 host, 8x 400 Gb/s "
	 "RoCE NICs (ASSUMPTION)",
	 64e9, TP_LINK_OTHER, XGMI_LAT},
	{"mi250x", "MI250X-GCD", 8, TP_LINK_PCIE, PCIE4, PCIE_LAT, NVL_MESH,
	 PCIE4, "200gbe", 4,
	 "4x AMD MI250X as 8 GCDs (a Frontier-like node), Infinity Fabric "
	 "50 GB/s peer to peer, 350 per GCD (hardware table; the faster links "
	 "between the 2 GCDs of a package are not modelled), 4x 200 Gb/s "
	 "NICs (Slingshot-11 on Frontier)",
	 50e9, TP_LINK_OTHER, XGMI_LAT},
	{"gaudi2", "Gaudi2-96GB", 8, TP_LINK_PCIE, PCIE4, PCIE_LAT, NVL_MESH,
	 NO_PCIE_CAP, "gaudi2-roce", 8,
	 "8x Intel Gaudi 2: 21 of each card's 24 100 GbE RoCE ports join the "
	 "others all to all, 3 per pair = 37.5 GB/s per direction; 3 ports "
	 "per card scale out (Gaudi 3 white paper)",
	 37.5e9, TP_LINK_OTHER, GAUDI_LAT},
	{"gaudi3", "Gaudi3-128GB", 8, TP_LINK_PCIE, PCIE5, PCIE_LAT, NVL_MESH,
	 NO_PCIE_CAP, "gaudi3-roce", 8,
	 "8x Intel Gaudi 3: 21 of each card's 24 200 GbE RoCE ports join the "
	 "others all to all, 3 per pair = 75 GB/s per direction; 3 ports per "
	 "card scale out (Gaudi 3 white paper)",
	 75e9, TP_LINK_OTHER, GAUDI_LAT},
};

const char *tp_node_preset_name(size_t i)
{
	return i < sizeof(presets) / sizeof(presets[0]) ? presets[i].name
							 : NULL;
}

/* Named compositions: a list of specs and a network. */
static const struct {
	const char *name;
	const char *specs[4];
	const char *net;
	const char *about;
} compositions[] = {
	{"tag-testbed",
	 {"v100-nvlink:1", "1080ti-pcie:4", "p100-pcie:2", NULL},
	 "25gbe",
	 "the TAG paper's physical testbed: 4x V100 + 8x 1080 Ti + 4x P100 "
	 "in 7 servers on one Ethernet switch (measured 2.81 GB/s between "
	 "servers, i.e. 25 GbE)"},
};

const char *const tp_topology_composition_names[] = {"tag-testbed", NULL};

/* DGX-1 (V100) hybrid cube mesh, as `nvidia-smi topo -m` shows it: two
 * fully connected quads (0-3, 4-7) plus links i <-> i+4; 6 NVLinks per
 * GPU, some pairs doubled. */
static const struct {
	uint8_t a, b, links;
} dgx1_mesh[] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2},
		 {1, 3, 1}, {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1},
		 {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1},
		 {6, 7, 2}};

static const struct node_preset *find_preset(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (strlen(presets[i].name) == len &&
		    strncmp(presets[i].name, name, len) == 0)
			return &presets[i];
	return NULL;
}

static const struct network *find_network(const char *name)
{
	for (size_t i = 0; i < sizeof(networks) / sizeof(networks[0]); i++)
		if (strcmp(networks[i].name, name) == 0)
			return &networks[i];
	return NULL;
}

static void list_presets(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; tp_node_preset_name(i); i++) {
		int k = snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
				 tp_node_preset_name(i));
		if (k < 0 || (size_t)k >= size - n)
			return;
		n += (size_t)k;
	}
	for (size_t i = 0; i < sizeof(compositions) / sizeof(compositions[0]);
	     i++) {
		int k = snprintf(buf + n, size - n, ", %s",
				 compositions[i].name);
		if (k < 0 || (size_t)k >= size - n)
			return;
		n += (size_t)k;
	}
}

/* The node presets whose name contains the unknown one ("a100" ->
 * "dgx-a100, a100-pcie, dgx-a100-40gb"), as " (did you mean ...?)" into
 * buf; empty when none does. */
/* The spec meant by an unknown one written another common way, in buf
 * as " (did you mean PRESET:N?)": the name in capitals or with '_' for
 * '-' ("DGX-A100:4", "dgx_a100:4"), the count before or after it
 * ("4xdgx-a100", "dgx-a100x4", "dgx-a100*4", "mi300xx2"; "mi300x4" is
 * mi300x:4; "4:dgx-a100", the count first); a count over what the
 * topology holds ("99999999999999999999xdgx-a100") is said to be out of
 * range, with the most nodes of that preset.  False when it is none. */
static bool spec_fix(const char *spec, char *buf, size_t size)
{
	char w[64], *name = w;
	const char *colon = strchr(spec, ':'), *digits = NULL;
	const struct node_preset *p;
	unsigned long long count = 0;
	size_t len = strlen(spec), d, ndigits = 0;

	if (len >= sizeof(w))
		return false;
	for (size_t i = 0; i <= len; i++)
		w[i] = spec[i] == '_' ? '-'
				      : (char)tolower((unsigned char)spec[i]);
	if (colon) {
		size_t c = (size_t)(colon - spec);
		w[c] = '\0';
		if (c && strspn(w, "0123456789") == c &&
		    find_preset(w + c + 1, len - c - 1)) {
			/* "4:dgx-a100" */
			digits = spec;
			ndigits = c;
			name = w + c + 1;
			colon = NULL;
		}
	} else if (find_preset(w, len)) {
		/* "DGX-A100" */
	} else if ((d = strspn(w, "0123456789")) && (w[d] == 'x' ||
						     w[d] == '*')) {
		/* "4xdgx-a100" */
		digits = spec;
		ndigits = d;
		name = w + d + 1;
	} else {
		/* "dgx-a100x4", "dgx-a100*4", "mi300x4" */
		size_t e = len;
		while (e > 0 && w[e - 1] >= '0' && w[e - 1] <= '9')
			e--;
		if (e < len && e > 0) {
			digits = spec + e;
			ndigits = len - e;
			w[e] = '\0';
			if (!find_preset(w, e) && (w[e - 1] == 'x' ||
						   w[e - 1] == '*'))
				w[e - 1] = '\0';
		}
	}
	if (!(p = find_preset(name, strlen(name))))
		return false;
	/* saturates far above any count a topology holds */
	for (size_t i = 0; i < ndigits && count <= UINT32_MAX; i++)
		count = count * 10 + (unsigned)(digits[i] - '0');
	if (colon)
		snprintf(buf, size, " (did you mean %s%.20s?)", name, colon);
	else if (count > TP_CLUSTER_MAX_DEVICES / p->gpus)
		snprintf(buf, size,
			 " (did you mean %s:N? %.*s%s is out of range: N is at "
			 "most %u, %d devices)",
			 name, ndigits > 24 ? 21 : (int)ndigits, digits,
			 ndigits > 24 ? "..." : "",
			 (unsigned)(TP_CLUSTER_MAX_DEVICES / p->gpus),
			 TP_CLUSTER_MAX_DEVICES);
	else if (count > 0)
		snprintf(buf, size, " (did you mean %s:%llu?)", name, count);
	else
		snprintf(buf, size, " (did you mean %s?)", name);
	return true;
}

static void similar_presets(const char *spec, size_t len, char *buf,
			    size_t size)
{
	size_t n = 0;
	char want[64];

	buf[0] = '\0';
	if (len == 0 || len >= sizeof(want) || size < 3)
		return;
	if (spec_fix(spec, buf, size))
		return;
	{
		/* "4", "x4" alone: a count, not a preset ("t4-pcie,
		   l4-pcie" contain it) */
		size_t x = spec[0] == 'x' || spec[0] == '*';
		if (len > x && strspn(spec + x, "0123456789") == len - x) {
			snprintf(buf, size,
				 " (a node count goes after its preset: "
				 "PRESET:%.20s, e.g. dgx-a100:%.20s)",
				 spec + x, spec + x);
			return;
		}
	}
	for (size_t i = 0; i < len; i++)
		want[i] = (char)tolower((unsigned char)spec[i]);
	want[len] = '\0';
	for (size_t i = 0; tp_node_preset_name(i); i++) {
		const char *name = tp_node_preset_name(i);
		int k;
		if (!strstr(name, want))
			continue;
		/* room kept for the closing "?)" */
		k = snprintf(buf + n, size - n - 2, "%s%s",
			     n ? ", " : " (did you mean ", name);
		if (k < 0 || (size_t)k >= size - n - 2) {
			buf[0] = '\0';
			return;
		}
		n += (size_t)k;
	}
	if (n)
		memcpy(buf + n, "?)", 3);
}

static void list_networks(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; tp_network_names[i]; i++) {
		int k = snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
				 tp_network_names[i]);
		if (k < 0 || (size_t)k >= size - n)
			return;
		n += (size_t)k;
	}
}

/* The direct links of an NVL_QUAD, NVL_PAIR or NVL_MESH node whose first
 * device is `first`. */
static enum tp_status add_pairs(struct tp_cluster *c,
				const struct node_preset *p, uint32_t first,
				struct tp_error *err)
{
	double bw = p->nvlink == NVL_QUAD ? 2 * NVLINK_LINK : p->mesh_bw_Bps;
	double lat = p->nvlink == NVL_QUAD ? NVLINK_LAT : p->mesh_latency_s;
	enum tp_link_kind kind =
		p->nvlink == NVL_QUAD ? TP_LINK_NVLINK : p->mesh_kind;

	for (uint32_t a = 0; a < p->gpus; a++)
		for (uint32_t b = a + 1; b < p->gpus; b++) {
			enum tp_status st;
			if (p->nvlink == NVL_PAIR && (a % 2 || b != a + 1))
				continue;
			st = tp_cluster_add_link(c, c->devices.v[first + a].vertex,
						 c->devices.v[first + b].vertex,
						 bw, lat, kind, err);
			if (st)
				return st;
		}
	return TP_OK;
}

/* Add one node of preset p named name, with NICs of network net. */
static enum tp_status add_node(struct tp_cluster *c, const struct node_preset *p,
			       const char *name, const struct network *net,
			       bool rails, struct tp_error *err)
{
	uint32_t type = tp_cluster_find_type(c, p->gpu), node;
	struct tp_node_build nb = {0};
	double nic_bw;
	enum tp_status st;

	if (type == TP_NONE)
		return tp_error_set(err, TP_EINTERNAL,
				    "preset %s: device type \"%s\" is not in "
				    "data/devices.json",
				    p->name, p->gpu);
	/* the NICs hang off PCIe: a GPU reaches one at most at PCIe speed */
	nic_bw = net->bw_Bps < p->pcie_Bps ? net->bw_Bps : p->pcie_Bps;
	nb.name = name;
	nb.type = type;
	nb.count = p->gpus;
	nb.fabric_kind = p->fabric;
	nb.fabric_bw_Bps = p->fabric_bw_Bps;
	nb.fabric_latency_s = p->fabric_latency_s;
	nb.n_nics = p->nics;
	nb.nic_bw_Bps = nic_bw;
	nb.nic_latency_s = net->latency_s;
	nb.rails = rails;
	if (rails && p->nics != p->gpus)
		return tp_error_set(err, TP_EUSAGE,
				    "--fabric rail: preset %s has %u NICs for "
				    "%u GPUs; a rail-optimised fabric needs one "
				    "NIC per GPU (use --fabric clos:... for it)",
				    p->name, p->nics, p->gpus);
	st = tp_cluster_build_node(c, &nb, &node, err);
	if (st)
		return st;
	if (p->nvlink != NVL_NONE) {
		uint32_t first = c->nodes.v[node].first_device;
		if (p->nvlink == NVL_DGX1) {
			for (size_t k = 0;
			     k < sizeof(dgx1_mesh) / sizeof(dgx1_mesh[0]); k++) {
				st = tp_cluster_add_link(
					c, c->devices.v[first + dgx1_mesh[k].a].vertex,
					c->devices.v[first + dgx1_mesh[k].b].vertex,
					dgx1_mesh[k].links * NVLINK_LINK,
					NVLINK_LAT, TP_LINK_NVLINK, err);
				if (st)
					return st;
			}
		} else {
			st = add_pairs(c, p, first, err);
			if (st)
				return st;
		}
	}
	return TP_OK;
}

/* One spec "PRESET[:N]" or a composition name: appends nodes.  counters
 * number the nodes of each preset across specs. */
static enum tp_status add_spec(struct tp_cluster *c, const char *spec,
			       const struct network *net_override, bool rails,
			       uint32_t *counters, struct tp_strbuf *name,
			       struct tp_error *err)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
	const struct node_preset *p = find_preset(spec, len);
	long long count = 1;
	char list[512], similar[160];

	if (!p) {
		for (size_t i = 0;
		     i < sizeof(compositions) / sizeof(compositions[0]); i++) {
			const struct network *net;
			if (colon || strcmp(spec, compositions[i].name) != 0)
				continue;
			net = net_override ? net_override
					   : find_network(compositions[i].net);
			for (int k = 0; compositions[i].specs[k]; k++) {
				enum tp_status st =
					add_spec(c, compositions[i].specs[k],
						 net, rails, counters, NULL,
						 err);
				if (st)
					return st;
			}
			if (name)
				tp_strbuf_addf(name, "%s%s",
					       name->len ? " " : "", spec);
			return TP_OK;
		}
		for (size_t i = 0;
		     i < sizeof(compositions) / sizeof(compositions[0]); i++)
			if (strlen(compositions[i].name) == len &&
			    !strncmp(spec, compositions[i].name, len))
				return tp_error_set(
					err, TP_EUSAGE,
					"\"%s\": %s is a fixed composition; it "
					"takes no :NODES",
					spec, compositions[i].name);
		list_presets(list, sizeof(list));
		similar_presets(spec, len, similar, sizeof(similar));
		return tp_error_set(err, TP_EUSAGE,
				    "unknown node preset \"%.*s\" in \"%s\"%s; "
				    "known: %s",
				    (int)len, spec, spec, similar, list);
	}
	if (colon) {
		char *end;
		/* the most nodes of p a topology holds */
		long long most = TP_CLUSTER_MAX_DEVICES / (long long)p->gpus;
		errno = 0;
		count = strtoll(colon + 1, &end, 10);
		if (end == colon + 1 || *end || count < 1)
			return tp_error_set(err, TP_EUSAGE,
					    "\"%s\": the node count after ':' "
					    "must be an integer from 1 to %lld "
					    "(%s has %u GPUs per node; a "
					    "topology holds at most %d devices)",
					    spec, most, p->name, p->gpus,
					    TP_CLUSTER_MAX_DEVICES);
		if (count > most || errno == ERANGE)
			return tp_error_set(err, TP_ELIMIT,
					    "\"%s\": more than %d devices in "
					    "the topology (the limit of this "
					    "version): %s has %u GPUs per "
					    "node, so at most %lld nodes of it",
					    spec, TP_CLUSTER_MAX_DEVICES,
					    p->name, p->gpus, most);
	}
	if (c->devices.n + (size_t)count * p->gpus > TP_CLUSTER_MAX_DEVICES)
		return tp_error_set(err, TP_ELIMIT,
				    "\"%s\": more than %d devices in the "
				    "topology (the limit of this version; "
				    "the presets before it hold %zu)",
				    spec, TP_CLUSTER_MAX_DEVICES,
				    c->devices.n);
	{
		const struct network *net =
			net_override ? net_override : find_network(p->net);
		size_t pi = (size_t)(p - presets);
		for (long long k = 0; k < count; k++) {
			char nn[96];
			enum tp_status st;
			snprintf(nn, sizeof(nn), "%s-%u", p->name,
				 counters[pi]++);
			st = add_node(c, p, nn, net, rails, err);
			if (st)
				return st;
		}
	}
	if (name)
		tp_strbuf_addf(name, "%s%s:%lld", name->len ? " " : "", p->name,
			       count);
	return TP_OK;
}

/* Latency a spine or core switch crossing adds when clos: gives no
 * latency= (ASSUMPTION: a few hundred ns per switch ASIC plus cabling,
 * rounded up). */
#define CLOS_SWITCH_LATENCY_S 5e-7

/* The tiers of a clos fabric: leaf switches of `leaf` nodes (uplinks
 * divided by leaf_over), spines of `spine` leaves (0: one spine) with
 * uplinks divided by over, and a core above the spines when spine > 0. */
static void clos_tiers(double leaf, double spine, double over, double lat,
		       double leaf_over, struct tp_tier *tiers, uint32_t *n)
{
	tiers[0] = (struct tp_tier){"leaf", (uint32_t)leaf, 0, 0, leaf_over};
	tiers[1] = (struct tp_tier){"spine", (uint32_t)spine, 0, lat, over};
	*n = 2;
	if (spine > 0)
		tiers[(*n)++] = (struct tp_tier){"core", 0, 0, lat, 1};
}

/* A parsed --fabric: its tiers, its clos: (or rail:) string for the
 * topology's name, and whether the nodes' NICs are rails. */
struct fabric {
	struct tp_tier tiers[3];
	uint32_t n_tiers;
	char spec[256];
	bool rails; /* rail: every GPU's NIC on its own rail's leaf */
};

/* The clos: string of a fabric, for the topology's name (the same for a
 * string and a file that say the same; %g: round trips for the values
 * people write); rail: for a rail-optimised one. */
static void clos_spec(double leaf, double spine, double over, double lat,
		      struct fabric *f)
{
	char *spec = f->spec;
	size_t size = sizeof(f->spec);
	int k = snprintf(spec, size, "%s:leaf=%.0f",
			 f->rails ? "rail" : "clos", leaf);

	if (spine > 0 && k >= 0 && (size_t)k < size)
		k += snprintf(spec + k, size - (size_t)k, ",spine=%.0f", spine);
	if (over != 1 && k >= 0 && (size_t)k < size)
		k += snprintf(spec + k, size - (size_t)k,
			      ",oversubscription=%g", over);
	if (lat != CLOS_SWITCH_LATENCY_S && k >= 0 && (size_t)k < size)
		snprintf(spec + k, size - (size_t)k, ",latency=%g", lat);
}

static int fabric_kind(const char *s)
{
	return strcmp(s, "clos") == 0 ? 0 : strcmp(s, "rail") == 0 ? 1 : -1;
}

/*
 * A fabric file (tagplan-fabric/1): the keys of the clos: string as JSON,
 *   {"format": "tagplan-fabric/1", "kind": "clos", "leaf": 32,
 *    "spine": 16, "oversubscription": 2, "latency": 5e-7}
 * Errors name the file and the JSON path (TP_EINPUT, exit 2).
 */
static enum tp_status read_fabric_file(const char *path, double leaf_over,
				       struct fabric *f, struct tp_error *err)
{
	static const char *const fields[] = {"format", "kind", "leaf",
					     "spine", "oversubscription",
					     "latency", NULL};
	struct tp_json_doc doc;
	struct tp_jctx j;
	char *text = NULL;
	size_t len = 0;
	int64_t leaf = 0, spine = 0;
	int kind = 0;
	double over = 1, lat = CLOS_SWITCH_LATENCY_S;
	enum tp_status st;

	struct tp_load_options o;

	if ((st = tp_file_read_text(path, 0, &text, &len, err))) {
		char why[sizeof(err->msg)];
		if (st != TP_EIO)
			return st;
		snprintf(why, sizeof(why), "%s", err->msg);
		return tp_error_set(err, TP_EUSAGE,
				    "--fabric %s: neither clos:..., rail:... "
				    "nor a readable fabric file (%s)",
				    path, why);
	}
	/* strict: a misspelt key would silently change the fabric */
	tp_load_options_default(&o);
	o.strict = true;
	st = tp_io_parse(path, text, len, &o, "tagplan-fabric/1", &doc, &j,
			 err);
	free(text);
	if (st)
		return st;
	if (!(st = tp_jctx_object(&j, doc.root, "a fabric", fields)) &&
	    !(st = tp_jget_enum(&j, doc.root, "kind", true, fabric_kind,
				       "clos | rail", 0, &kind)) &&
	    !(st = tp_jget_int(&j, doc.root, "leaf", true, 1,
			       TP_CLUSTER_MAX_DEVICES, 0, &leaf)) &&
	    !(st = tp_jget_int(&j, doc.root, "spine", false, 1,
			       TP_CLUSTER_MAX_DEVICES, 0, &spine)) &&
	    !(st = tp_io_get_quantity(&j, doc.root, "oversubscription", false,
				      TP_JNUM_GE1, TP_IOQ_OVERSUBSCRIPTION, 1,
				      &over)))
		st = tp_io_get_quantity(&j, doc.root, "latency", false,
					TP_JNUM_NONNEG, TP_IOQ_LATENCY,
					CLOS_SWITCH_LATENCY_S, &lat);
	tp_json_doc_release(&doc);
	if (st)
		return st;
	f->rails = kind == 1;
	clos_tiers((double)leaf, (double)spine, over, lat, leaf_over, f->tiers,
		   &f->n_tiers);
	clos_spec((double)leaf, (double)spine, over, lat, f);
	return TP_OK;
}

/* "clos:leaf=N[,spine=M][,oversubscription=X][,latency=S]" (or rail:
 * with the same keys) or a fabric file -> tiers. */
static enum tp_status parse_fabric(const char *fabric, double leaf_over,
				   struct fabric *f, struct tp_error *err)
{
	static const char usage[] =
		"use clos:leaf=N[,spine=M][,oversubscription=X][,latency=S] "
		"or rail: with the same keys";
	double leaf = 0, spine = 0, over = 1, lat = CLOS_SWITCH_LATENCY_S;
	const char *p;

	f->rails = strncmp(fabric, "rail:", 5) == 0;
	if (strncmp(fabric, "clos:", 5) != 0 && !f->rails)
		return read_fabric_file(fabric, leaf_over, f, err);
	for (p = fabric + 5; *p;) {
		const char *eq, *end;
		size_t klen;
		double *dst = NULL, v;
		char *stop;

		/* spaces around the keys and values, as in a strategy */
		while (*p == ' ' || *p == '\t')
			p++;
		eq = strchr(p, '=');
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end)
			return tp_error_set(err, TP_EUSAGE,
					    "fabric \"%s\": \"%.*s\" is not "
					    "KEY=VALUE; %s",
					    fabric, (int)(end - p), p, usage);
		klen = (size_t)(eq - p);
		while (klen && (p[klen - 1] == ' ' || p[klen - 1] == '\t'))
			klen--;
		if (klen == 4 && !strncmp(p, "leaf", 4))
			dst = &leaf;
		else if (klen == 5 && !strncmp(p, "spine", 5))
			dst = &spine;
		else if (klen == 16 && !strncmp(p, "oversubscription", 16))
			dst = &over;
		else if (klen == 7 && !strncmp(p, "latency", 7))
			dst = &lat;
		else
			return tp_error_set(err, TP_EUSAGE,
					    "fabric \"%s\": unknown key "
					    "\"%.*s\"; %s",
					    fabric, (int)klen, p, usage);
		v = strtod(eq + 1, &stop);
		while (stop < end && (*stop == ' ' || *stop == '\t'))
			stop++;
		if (memchr(eq + 1, ';', (size_t)(end - eq - 1)))
			return tp_error_set(err, TP_EUSAGE,
					    "fabric \"%s\": the keys are "
					    "separated by commas, not "
					    "semicolons; %s",
					    fabric, usage);
		if (stop != end || eq + 1 == end || !isfinite(v) ||
		    (dst == &over && v < 1) || (dst == &lat && v < 0) ||
		    ((dst == &leaf || dst == &spine) &&
		     (v < 1 || v > TP_CLUSTER_MAX_DEVICES || v != floor(v))))
			return tp_error_set(
				err, TP_EUSAGE,
				"fabric \"%s\": bad value for %.*s (leaf "
				"and spine: integers >= 1; oversubscription "
				">= 1; latency: seconds >= 0)",
				fabric, (int)klen, p);
		*dst = v;
		p = *end ? end + 1 : end;
	}
	if (leaf == 0)
		return tp_error_set(err, TP_EUSAGE,
				    "fabric \"%s\": leaf=N (nodes per leaf "
				    "switch) is required; %s",
				    fabric, usage);
	clos_tiers(leaf, spine, over, lat, leaf_over, f->tiers, &f->n_tiers);
	clos_spec(leaf, spine, over, lat, f);
	return TP_OK;
}

enum tp_status tp_build_topology(const char *const *specs, int n_specs,
				 const char *network, double oversubscription,
				 struct tp_cluster *c, struct tp_error *err)
{
	return tp_build_topology_fabric(specs, n_specs, network,
					oversubscription, NULL, c, err);
}

enum tp_status tp_build_topology_fabric(const char *const *specs, int n_specs,
					const char *network,
					double oversubscription,
					const char *fabric,
					struct tp_cluster *c,
					struct tp_error *err)
{
	struct fabric fab = {.n_tiers = 0};
	const struct network *net = NULL;
	uint32_t counters[sizeof(presets) / sizeof(presets[0])] = {0};
	struct tp_strbuf name;
	enum tp_status st = TP_OK;
	char list[512];

	if (n_specs < 1) {
		list_presets(list, sizeof(list));
		return tp_error_set(err, TP_EUSAGE,
				    "no node preset given (PRESET:NODES); "
				    "known: %s",
				    list);
	}
	if (network && !(net = find_network(network))) {
		struct tp_strbuf sug;
		size_t nn = 0;
		while (tp_network_names[nn])
			nn++;
		tp_strbuf_init(&sug);
		tp_io_suggest(network, tp_network_names, nn, 3, &sug);
		list_networks(list, sizeof(list));
		st = tp_error_set(err, TP_EUSAGE,
				  "unknown network \"%s\"%s%s%s; known: %s",
				  network, sug.len ? " (did you mean " : "",
				  tp_strbuf_cstr(&sug), sug.len ? "?)" : "",
				  list);
		tp_strbuf_release(&sug);
		return st;
	}
	if (!(oversubscription >= 1) || oversubscription > 1e6)
		return tp_error_set(err, TP_EUSAGE,
				    "oversubscription must be a number >= 1, "
				    "not %g",
				    oversubscription);
	if (fabric && (st = parse_fabric(fabric, oversubscription, &fab, err)))
		return st;
	tp_strbuf_init(&name);
	st = tp_devices_load_builtin(c, err);
	for (int i = 0; !st && i < n_specs; i++)
		st = add_spec(c, specs[i], net, fab.rails, counters, &name,
			      err);
	if (!st && net)
		tp_strbuf_addf(&name, " --net %s", net->name);
	if (!st && oversubscription > 1)
		tp_strbuf_addf(&name, " --oversubscription %g",
			       oversubscription);
	if (!st && fabric)
		tp_strbuf_addf(&name, " --fabric %s", fab.spec);
	if (!st && fabric)
		st = tp_cluster_connect_tiers(c, fab.tiers, fab.n_tiers, err);
	else if (!st)
		st = tp_cluster_connect_star(c, oversubscription, NULL, err);
	if (!st) {
		const char *nm = tp_arena_strdup(&c->arena,
						 tp_strbuf_cstr(&name));
		if (!nm || name.failed)
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
		else
			c->name = nm;
	}
	if (!st)
		st = tp_cluster_finalize(c, err);
	tp_strbuf_release(&name);
	if (st) {
		tp_cluster_release(c);
		tp_cluster_init(c);
	}
	return st;
}

/* The host bus of each device type of data/devices.json, by its exact
 * name: the PCIe x16 rate and one NVLink's rate, per direction (NVLink 1:
 * 20 GB/s; 2-4: 25; 5: 50; the RTX 3090's bridge: 4 x4 links of 14.0625
 * GB/s, GA102 whitepaper); 0 = no NVLink (PCIe cards without bridges,
 * AMD and Intel accelerators, whose own links nvidia-smi does not show).
 * The presets' PCIe figures agree with it (test_build checks). */
static const struct {
	const char *gpu;
	double pcie_Bps, nvlink_Bps;
} gpu_buses[] = {
	{"V100-SXM2-16GB", PCIE3, NVLINK_LINK},
	{"V100-SXM2-32GB", PCIE3, NVLINK_LINK},
	{"V100-PCIe-16GB", PCIE3, 0},
	{"V100-PCIe-32GB", PCIE3, 0},
	{"V100S-PCIe-32GB", PCIE3, 0},
	{"A100-SXM4-40GB", PCIE4, NVLINK_LINK},
	{"A100-SXM4-80GB", PCIE4, NVLINK_LINK},
	{"A100-PCIe-40GB", PCIE4, NVLINK_LINK},
	{"A100-PCIe-80GB", PCIE4, NVLINK_LINK},
	{"H100-SXM5-80GB", PCIE5, NVLINK_LINK},
	{"H100-PCIe-80GB", PCIE5, NVLINK_LINK},
	{"H100-NVL-94GB", PCIE5, NVLINK_LINK},
	{"H200-SXM-141GB", PCIE5, NVLINK_LINK},
	{"GTX-1080-Ti", PCIE3, 0},
	{"P100-SXM2-16GB", PCIE3, NVLINK1_LINK},
	{"P100-PCIe-16GB", PCIE3, 0},
	{"P100-PCIe-12GB", PCIE3, 0},
	{"T4-16GB", PCIE3, 0},
	{"A10-24GB", PCIE4, 0},
	{"L4-24GB", PCIE4, 0},
	{"RTX-3090-24GB", PCIE4, 14.0625e9},
	{"RTX-4090-24GB", PCIE4, 0},
	{"MI250X", PCIE4, 0},
	{"MI250X-GCD", PCIE4, 0},
	{"MI300X", PCIE5, 0},
	{"B200-SXM-180GB", PCIE5, NVLINK5_GPU / 18},
	{"GB200-186GB", PCIE5, NVLINK5_GPU / 18},
	{"Gaudi2-96GB", PCIE4, 0},
	{"Gaudi3-128GB", PCIE5, 0},
};

bool tp_gpu_bus(const char *type, double *pcie_Bps, double *nvlink_Bps)
{
	for (size_t i = 0; i < sizeof(gpu_buses) / sizeof(gpu_buses[0]); i++)
		if (strcmp(gpu_buses[i].gpu, type) == 0) {
			*pcie_Bps = gpu_buses[i].pcie_Bps;
			*nvlink_Bps = gpu_buses[i].nvlink_Bps;
			return true;
		}
	return false;
}

bool tp_node_preset_info(const char *name, const char **gpu, uint32_t *gpus,
			 double *pcie_Bps)
{
	const struct node_preset *p = find_preset(name, strlen(name));

	if (!p)
		return false;
	*gpu = p->gpu;
	*gpus = p->gpus;
	*pcie_Bps = p->pcie_Bps < NO_PCIE_CAP ? p->pcie_Bps : 0;
	return true;
}

const char *tp_node_preset_about(const char *name)
{
	const struct node_preset *p = find_preset(name, strlen(name));

	if (p)
		return p->about;
	for (size_t i = 0; i < sizeof(compositions) / sizeof(compositions[0]);
	     i++)
		if (strcmp(compositions[i].name, name) == 0)
			return compositions[i].about;
	return NULL;
}

const char *tp_network_about(const char *name)
{
	const struct network *n = find_network(name);

	return n ? n->about : NULL;
}

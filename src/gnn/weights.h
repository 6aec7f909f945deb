/*
 * weights.h - the GNN weights file: a versioned little-endian binary with
 * a header, the feature normalisation and the weights, and a CRC-32.
 *
 * Layout (version 3; version 1 had no gain head, versions 1 and 2 had a
 * value head, whose four tensors followed the gain head's; all integers
 * little-endian, floats IEEE-754 binary32):
 *
 *   offset size
 *        0    8  magic "TPGNNW\r\n" (the CR LF catches text-mode mangling)
 *        8    4  format version (3)
 *       12    4  header size in bytes (248)
 *       16   16  hidden, heads, layers, head_hidden
 *       32   16  feature widths: group, device, action, global
 *       48   20  edge feature widths: flow, back, link, place, serve
 *       68    4  number of normalisation constants N
 *       72    8  number of weights W
 *       80   68  training metadata: seed (u64), games, epochs, samples
 *                (u32), train and held-out loss (f32), training seconds
 *                (f64), tagplan version (32 bytes, NUL-padded)
 *      148   64  note (at most 63 bytes, NUL-padded)
 *      212   32  the OpenBLAS kernel set that trained it (tensor.h
 *                tp_tensor_blas_core: "Haswell", ...; NUL-padded)
 *      244    4  corpus_gpus (u32): the most devices of any cluster
 *                of the training corpus (0 = not recorded)
 *      248  4 N  normalisation means, then 4 N standard deviations
 *           4 W  weights, in the order of tp_gnn_net_tensor
 *            4   CRC-32 (IEEE 802.3) of every byte before it
 *
 * Loading checks, in this order, and fails with TP_EINPUT naming the file
 * and what is wrong: the magic, the version, the header size, the layer
 * sizes (in range, N and W consistent with them), the file size
 * (truncated or trailing bytes), the checksum, the feature widths against
 * those this build computes (a file from another feature version; one
 * whose action or global widths are only smaller, the other widths equal,
 * is read zero-padded instead: the network computes what it did and
 * ignores the appended features, features.h), and
 * that every number is finite (standard deviations positive).  A bad file
 * never yields a network.
 *
 * The kernel set is recorded since 2026-12-07 without a new version: it
 * takes the last 32 bytes of what was a 96-byte note, which the files
 * written before left zero (notes were "tagplan train", or a test's), so
 * they read as "" (not recorded), and a tagplan of before reads the new
 * files' note up to its NUL and ignores the kernel set.  A file whose
 * note fills its first 64 bytes (no NUL there) is an older one with a
 * note of 64-95 bytes: the note is read whole and the kernel set is "".
 *
 * The corpus's largest cluster (corpus_gpus) is recorded since issue 27,
 * also without a new version: its 4 bytes were reserved and every file
 * written before has 0 there, which reads as "not recorded" (the search
 * then uses the network on any cluster: provider.h covers); a tagplan of
 * before ignores them.  Only the header and the CRC differ from the file
 * the same training wrote before.
 *
 * A version-2 file (the value head's weights after the gain head's) is
 * refused, naming the file and the fix ('make weights'), rather than read
 * without its value head: the shipped file is retrained whenever the
 * layout changes, and one reader per version keeps this file simple.
 * Its priors and gains are those of the version-3 file that drops the
 * value tensors (the value head was a separate branch; src/gnn/README
 * "Values").
 */
#ifndef TP_GNN_WEIGHTS_H
#define TP_GNN_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "graph.h"
#include "net.h"

#define TP_GNN_WEIGHTS_VERSION 3
#define TP_GNN_WEIGHTS_HEADER 248

/* CRC-32 (IEEE, reflected, as zlib's crc32) of n bytes. */
uint32_t tp_gnn_crc32(const unsigned char *p, size_t n);

/* Serialise net into a new buffer (*buf, caller frees). */
enum tp_status tp_gnn_weights_encode(const struct tp_gnn_net *net,
				     unsigned char **buf, size_t *len,
				     struct tp_error *err);

/*
 * Parse a weights file held in memory; name is used in messages.  When
 * expect != NULL the file's feature widths must equal it, or differ only
 * by fewer action or global features (then padded to expect with zero
 * weights and identity normalisation).  Returns a new
 * network, or NULL with err filled (TP_EINPUT, TP_ENOMEM).
 */
struct tp_gnn_net *tp_gnn_weights_decode(const char *name,
					 const unsigned char *buf, size_t len,
					 const struct tp_gnn_widths *expect,
					 struct tp_error *err);

/* Write net to path atomically (TP_EIO naming the path). */
enum tp_status tp_gnn_weights_save(const struct tp_gnn_net *net,
				   const char *path, struct tp_error *err);

/* Read and decode path (TP_EIO when it cannot be read). */
struct tp_gnn_net *tp_gnn_weights_load(const char *path,
				       const struct tp_gnn_widths *expect,
				       struct tp_error *err);

#endif

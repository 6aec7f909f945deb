/*
 * provider.h - the GNN as the search's prior provider (src/search/prior.h).
 *
 *   struct tp_gnn_prior *gp;
 *   struct tp_prior_provider pp;
 *   if (tp_gnn_prior_load_default(weights_path_or_NULL, &pp, &gp, &err))
 *           ... report err (TP_EINPUT for a bad file, TP_EIO unreadable);
 *   options.prior = &pp;  ... tp_search_run ...
 *   tp_gnn_prior_free(gp);          after the search
 *
 * evaluate() builds the input graph of the state (features.h; static
 * features are cached per search thread and rebuilt when the model,
 * cluster or groups change), runs one forward pass (its encoders and
 * message-passing layers from the scratch's body cache, net.h, when a
 * state of the same plan was just asked about) and returns the
 * softmax over the candidate actions as priors, and, when the state asks
 * for them (tp_prior_state.gains), each action's predicted gain.
 *
 * No value: the network has no value head since weights version 3 (it
 * was trained but never given to the search, and did not help the
 * policy; README, "Values").
 *
 * Threads: the provider's ctx (struct tp_gnn_prior) is read-only during a
 * search; every search thread gets its own scratch (tape + features).
 * OpenBLAS must run single-threaded inside search threads (main sets it).
 *
 * Ownership: tp_gnn_prior_new takes ownership of the network;
 * tp_gnn_prior_free frees it (NULL is a no-op).  The provider struct
 * borrows the tp_gnn_prior, which must outlive the search.
 */
#ifndef TP_GNN_PROVIDER_H
#define TP_GNN_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/prior.h"
#include "net.h"

/* The weights `tagplan plan` loads by default, under the data directory
 * (io.h tp_data_path): one network (Makefile, `make weights`; README,
 * "Training").  Until 2026-12-06 an ensemble of two ("Ensemble"); a list
 * here is still read as one (up to TP_GNN_MAX_MEMBERS). */
#define TP_GNN_DEFAULT_WEIGHTS "tagplan.weights"
#define TP_GNN_MAX_MEMBERS 4

struct tp_gnn_prior;

/* A provider around net (taken over; freed by tp_gnn_prior_free).  NULL
 * on allocation failure (net is then freed). */
struct tp_gnn_prior *tp_gnn_prior_new(struct tp_gnn_net *net,
				      const char *source);
void tp_gnn_prior_free(struct tp_gnn_prior *gp);

/* Another member of the ensemble (taken over; freed, and false, when
 * there are TP_GNN_MAX_MEMBERS already); source is appended to the
 * provider's, after a comma.  The members must read the same features
 * (tp_gnn_weights_load checks them against this build); their sizes may
 * differ.  evaluate() runs every member on the state and returns the
 * mean of their priors, the mean of their predicted ln(t_state /
 * t_child) and the mean of their raw values. */
bool tp_gnn_prior_add(struct tp_gnn_prior *gp, struct tp_gnn_net *net,
		      const char *source);
uint32_t tp_gnn_prior_members(const struct tp_gnn_prior *gp);

/* Fill a provider whose ctx is gp (name "gnn"). */
void tp_gnn_prior_provider(struct tp_gnn_prior *gp,
			   struct tp_prior_provider *pp);

/*
 * The domain the network was trained on: the smallest corpus_gpus
 * (net.h tp_gnn_meta, the most GPUs of a cluster of its training corpus)
 * recorded among the members, or 0 when none records one (files written
 * before issue 27).  The provider's covers() (core/prior.h) says no to a
 * cluster of more devices, naming both sizes; a member of unknown corpus
 * rules nothing out.  Why: on a cluster four times the largest it was
 * trained on (GPT-3 175B on 1,024 GPUs, README "Beyond its corpus") its
 * guided search lost at every time budget and at equal playouts.
 */
uint32_t tp_gnn_prior_corpus_gpus(const struct tp_gnn_prior *gp);

/* The first member, and where the members came from (their file paths,
 * comma-separated, for summaries). */
const struct tp_gnn_net *tp_gnn_prior_net(const struct tp_gnn_prior *gp);
/* Member m (0-based), NULL past the last. */
const struct tp_gnn_net *tp_gnn_prior_member(const struct tp_gnn_prior *gp,
					     uint32_t m);
const char *tp_gnn_prior_source(const struct tp_gnn_prior *gp);

/*
 * Load weights from path, a file or a comma-separated list of files (an
 * ensemble; NULL = the files of TP_GNN_DEFAULT_WEIGHTS in the data
 * directory: the first found as io.h tp_data_path finds data files, the
 * others beside it), check each against this build's features and fill
 * *pp and *gp.  Errors: TP_EIO when a file cannot be found or read (for
 * the default list: when the first cannot; a later one missing beside
 * it is a broken install, TP_EINPUT), TP_EINPUT naming the file and what
 * is wrong with it (or a malformed list), TP_ENOMEM; nothing is loaded
 * then.
 */
enum tp_status tp_gnn_prior_load_default(const char *path,
					 struct tp_prior_provider *pp,
					 struct tp_gnn_prior **gp,
					 struct tp_error *err);

/*
 * One evaluation outside a search (training, benchmarks): priors over the
 * state's actions, and when st->gains is not NULL the gain head's
 * predictions as ln(t_state / t_child) (prior.h), as the search's
 * evaluate() gets them.  scratch comes from the provider's scratch_new.
 */
enum tp_status tp_gnn_prior_eval(struct tp_gnn_prior *gp, void *scratch,
				 const struct tp_prior_state *st,
				 float *priors, struct tp_error *err);

#endif

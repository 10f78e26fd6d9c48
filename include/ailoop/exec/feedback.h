#ifndef AILOOP_FEEDBACK_H
#define AILOOP_FEEDBACK_H

#include "ailoop/model/doc.h"
#include "ailoop/model/flow.h"
#include "ailoop/base/strbuf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * FEEDBACK edges (SPEC §8, seed 002): an action with `feedback_enabled`
 * asks an earlier node to redo its work, by a `feedback:` map in its
 * output's front matter. The node that holds both (the handler: the
 * sequence whose earlier child is the target, or the target itself when
 * it is an ancestor) runs its children again from the target on, with the
 * feedback in the prompts of the target's agents and in working memory;
 * the sender runs again among them, and verifies: succeeding without new
 * feedback to the same target resolves it. Two rounds per (from, to) pair,
 * chains of three at most, and a target that open feedback already names
 * (a cycle) is refused.
 *
 * Every state change is a line of feedback.jsonl in the run's directory,
 * a complete record of the feedback: the last line of an id is its state.
 * That file is the only state of feedback, committed with the iteration,
 * and what a resume reads.
 */
#define AL_FEEDBACK_FILE "feedback.jsonl"
#define AL_FEEDBACK_MAX_ROUNDS 2
#define AL_FEEDBACK_MAX_DEPTH 3
/*
 * Bytes of a feedback's message or suggested_fix kept in its record (which
 * feedback.jsonl repeats at each state, and the target's prompt shows), as
 * output_to_memory keeps a body: a longer text is cut, and says so; the
 * whole is in the sender's output file. Quoted in a message, a feedback's
 * text is cut at AL_FEEDBACK_QUOTE_MAX.
 */
#define AL_FEEDBACK_TEXT_MAX (64 * 1024)
#define AL_FEEDBACK_QUOTE_MAX 200

extern const char *const al_feedback_types[4];

/*
 * Reads the `feedback:` value `v` of the output file `file` into a new
 * record (to, type, message, suggested_fix, priority). AL_EINVALID with
 * al_errmsg() "FILE:LINE:COL: …" when it is malformed.
 */
int al_feedback_parse(const struct al_val *v, const char *file, json_t **out);

/*
 * Where feedback from `sender` to the record's `to` (an id or a node path)
 * is handled: sets to (as the target's path), handler, restart and upto
 * (the handler's children run again from `restart`; child `upto` holds the
 * sender). AL_EINVALID, with why, when the target is unknown or is neither
 * an ancestor of the sender nor an earlier sibling in a sequence.
 */
int al_feedback_route(const struct al_flow *flow, const struct al_node *sender, json_t *fb);

/* The state of every feedback of a run: the last record of each id, oldest id first. */
struct al_feedback_log {
	json_t **items;
	size_t n;
	const json_t *last; /* the record of the file's last line (one of items), or NULL */
};
int al_feedback_log_parse(struct al_feedback_log *log, const char *text, size_t len);
/* AL_ENOTFOUND-free: a missing file is an empty log. */
int al_feedback_log_read(struct al_feedback_log *log, const char *run_dir);
void al_feedback_log_release(struct al_feedback_log *log);
bool al_feedback_is_open(const json_t *f);
struct al_exec;
/*
 * On resume: the states that feedback edges under way removed (their
 * nodes run again) are noted as removed by ailoop (al_as_is_note), so
 * that the first commits do not put them back as an agent's removal.
 */
void al_feedback_note_removed(struct al_exec *ex);

/*
 * Whether a new feedback may be queued beside the open ones of `log`:
 * AL_EINVALID with why (a cycle, a chain deeper than AL_FEEDBACK_MAX_DEPTH,
 * the pair's rounds spent); else sets its depth.
 */
int al_feedback_admit(const struct al_feedback_log *log, json_t *fb);

/* --- the executor's hooks (exec.h) ----------------------------------- */
struct al_node_run;
struct al_md;
struct al_run;

/*
 * An action's agent has ended (`md` its output, NULL if it failed): reads
 * its feedback, settles the feedback it verifies, queues the new one.
 * May change *status ("complete", "failed", …) and *summary.
 */
int al_feedback_after_action(struct al_node_run *nr, const struct al_md *md, const char *output,
			     const char **status, char **summary);
/* After the action's commit: AL_EFEEDBACK if it queued feedback, for its handler to take. */
int al_feedback_pending(struct al_node_run *nr);
/*
 * A control node, before its next child, or `caught` AL_EFEEDBACK from it:
 * delivers the feedback it handles (queued: only once caught, after the
 * sender's commit; its children's states go, it goes back to the target)
 * and moves it to processing and verifying. Returns 1 if the node's state
 * changed, 0 if not, or an error.
 */
int al_feedback_step(struct al_node_run *nr, bool caught);
/* A control node has ended: the feedback it handles that is still open fails. */
void al_feedback_abandon(struct al_node_run *nr);
/* The {feedback-section} of an agent of `node_path`: the feedback it works on. */
void al_feedback_section(const struct al_run *run, const char *node_path, struct al_strbuf *out);

#endif

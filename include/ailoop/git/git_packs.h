#ifndef AILOOP_GIT_PACKS_H
#define AILOOP_GIT_PACKS_H

struct git_repository;

/*
 * libgit2 reads objects/pack again (a stat, the multi-pack-index, the
 * directory: eight system calls) each time an object is not found, and a
 * new object is not found before it is written: a dozen times per commit.
 * Packs only appear when something packs (git gc, a fetch), which changes
 * the directory: from this call on, the pack store of `repo` reads the
 * directory again only if its stat data changed, or a second has passed
 * since it last did. Nothing is changed for a repository with alternates
 * (their packs are elsewhere) or an object store not made the usual way.
 */
void al_git_gate_pack_refresh(struct git_repository *repo);

#endif

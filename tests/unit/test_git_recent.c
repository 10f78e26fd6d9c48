#include "../../src/git/git_repo.h"
#include "unit.h"

/*
 * The store that keeps what a commit wrote (git_recent.c): what it serves
 * is read back although its loose file is gone, so each test removes the
 * file and looks the object up again.
 */
static git_repository *repo;
static struct al_git_recent *recent;

static void setup(void)
{
	unit_hang_guard(30);
	unit_enter_git_tmpdir();
	unit_sh("git init -q -b main . && git commit -q --allow-empty -m one");
	git_libgit2_init();
	/* every read asks the stores, not libgit2's own cache of what it read */
	git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0);
	cr_assert_eq(git_repository_open(&repo, "."), 0);
	recent = al_git_recent_add(repo);
	cr_assert_not_null(recent);
}

static void teardown(void)
{
	git_repository_free(repo);
	git_libgit2_shutdown();
	unit_leave_tmpdir();
}

TestSuite(git_recent, .init = setup, .fini = teardown);

/* A tree of one file `name` holding `text`, written into *id. */
static int write_tree(git_oid *id, const char *name, const char *text)
{
	git_treebuilder *b = NULL;
	git_oid blob;
	int rc;

	cr_assert_eq(git_blob_create_from_buffer(&blob, repo, text, strlen(text)), 0);
	cr_assert_eq(git_treebuilder_new(&b, repo, NULL), 0);
	cr_assert_eq(git_treebuilder_insert(NULL, b, name, &blob, GIT_FILEMODE_BLOB), 0);
	rc = git_treebuilder_write(id, b);
	git_treebuilder_free(b);
	return rc;
}

static char *loose_path(const git_oid *id)
{
	char hex[GIT_OID_HEXSZ + 1];

	git_oid_tostr(hex, sizeof(hex), id);
	return al_xprintf("%sobjects/%.2s/%s", git_repository_path(repo), hex, hex + 2);
}

/* Whether the object is found once its loose file is gone. */
static bool found_without_file(const git_oid *id)
{
	char *path = loose_path(id);
	git_odb *odb = NULL;
	git_odb_object *obj = NULL;
	bool found;

	unlink(path);
	free(path);
	cr_assert_eq(git_repository_odb(&odb, repo), 0);
	found = git_odb_read(&obj, odb, id) == 0;
	git_odb_object_free(obj);
	git_odb_free(odb);
	return found;
}

Test(git_recent, a_commits_trees_are_read_back_until_the_commit_after_it)
{
	git_oid tree;
	git_odb *odb = NULL;
	git_odb_object *obj = NULL;
	char *path;

	al_git_recent_begin(recent);
	cr_assert_eq(write_tree(&tree, "a.txt", "a\n"), 0);
	al_git_recent_end(recent);
	path = loose_path(&tree);
	cr_assert_eq(access(path, F_OK), 0, "written on disk too");
	free(path);
	cr_assert(found_without_file(&tree), "the tree is kept");
	cr_assert_eq(git_repository_odb(&odb, repo), 0);
	cr_assert_eq(git_odb_read(&obj, odb, &tree), 0);
	cr_assert_eq(git_odb_object_type(obj), GIT_OBJECT_TREE);
	cr_assert_eq(git_odb_object_size(obj), 28 + 5, "the tree's own bytes");
	git_odb_object_free(obj);
	git_odb_free(odb);

	al_git_recent_begin(recent); /* the next commit reads it back */
	al_git_recent_end(recent);
	cr_assert(found_without_file(&tree), "kept through the commit after");
	al_git_recent_begin(recent);
	al_git_recent_end(recent);
	cr_assert_not(found_without_file(&tree), "forgotten at the one after that");
}

Test(git_recent, blobs_and_what_is_written_outside_a_commit_are_not_kept)
{
	git_oid tree, blob;
	git_odb *odb = NULL;

	cr_assert_eq(write_tree(&tree, "b.txt", "b\n"), 0);
	cr_assert_not(found_without_file(&tree), "written outside a commit");
	al_git_recent_begin(recent);
	cr_assert_eq(git_blob_create_from_buffer(&blob, repo, "c\n", 2), 0);
	al_git_recent_end(recent);
	cr_assert_not(found_without_file(&blob), "a blob");
	cr_assert_eq(git_repository_odb(&odb, repo), 0);
	cr_assert_not(git_odb_exists(odb, &tree), "existence is asked on disk");
	git_odb_free(odb);
}

Test(git_recent, a_write_that_failed_is_not_kept)
{
	git_oid tree;
	char *path, *dir, *aside;

	/* the same tree's name, learnt in a scratch repository */
	unit_sh("mkdir scratch && cd scratch && git init -q && printf 'd\\n' >d.txt && "
		"git add d.txt && git write-tree >../tree-id");
	{
		FILE *f = fopen("tree-id", "r");
		char hex[GIT_OID_HEXSZ + 2] = "";

		cr_assert_not_null(f);
		cr_assert_not_null(fgets(hex, sizeof(hex), f));
		fclose(f);
		hex[GIT_OID_HEXSZ] = '\0';
		cr_assert_eq(git_oid_fromstr(&tree, hex), 0);
	}
	/*
	 * Its fan-out directory a file: the loose objects cannot write it. The
	 * directory may hold objects already (the set-up's commit, named by
	 * its time): set aside, and back after.
	 */
	path = loose_path(&tree);
	dir = al_strndup(path, strrchr(path, '/') - path);
	aside = al_xprintf("%s.aside", dir);
	cr_assert(rename(dir, aside) == 0 || errno == ENOENT, "%s", strerror(errno));
	unit_write(dir, "not a directory\n");
	al_git_recent_begin(recent);
	cr_assert_neq(write_tree(&tree, "d.txt", "d\n"), 0, "the write fails");
	al_git_recent_end(recent);
	cr_assert_not(found_without_file(&tree), "nothing kept of it");
	cr_assert_eq(unlink(dir), 0);
	rename(aside, dir);
	free(aside);
	free(dir);
	free(path);
}

Test(git_recent, an_object_the_store_lacks_is_written_through_the_loose_objects)
{
	git_oid id;
	git_blob *blob = NULL;
	char *path;

	cr_assert_eq(git_odb_hash(&id, "e\n", 2, GIT_OBJECT_BLOB), 0);
	cr_assert_eq(al_git_recent_write_new(recent, &id, "e\n", 2, GIT_OBJECT_BLOB), 0);
	path = loose_path(&id);
	cr_assert_eq(access(path, F_OK), 0, "a loose object");
	free(path);
	cr_assert_eq(git_blob_lookup(&blob, repo, &id), 0);
	cr_assert_eq(git_blob_rawsize(blob), 2);
	cr_assert_eq(memcmp(git_blob_rawcontent(blob), "e\n", 2), 0);
	git_blob_free(blob);
	unit_sh("git cat-file -e $(printf 'e\\n' | git hash-object --stdin)");
}

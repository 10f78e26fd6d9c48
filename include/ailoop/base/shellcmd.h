#ifndef AILOOP_SHELLCMD_H
#define AILOOP_SHELLCMD_H

/*
 * The program a shell command runs first, past `cd DIR &&`, `env` and
 * assignments (`cd api && FOO=1 env pytest -q` runs pytest); NULL when that
 * cannot be told without a shell (quotes, expansions) or it is the shell's
 * own (`cd`, `test`, `echo`, `sh`). Caller frees.
 */
char *al_shell_program(const char *cmd);

#endif

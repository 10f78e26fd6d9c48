#include "ailoop/base/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t count;
static int pipe_fds[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	count++;
	if (pipe_fds[1] >= 0 && write(pipe_fds[1], &c, 1) < 0)
		c = 0; /* a full pipe means the loop is awake already */
	errno = saved;
}

void al_signals_install(void)
{
	struct sigaction sa, old;

	if (pipe_fds[0] < 0 && pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) < 0)
		pipe_fds[0] = pipe_fds[1] = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a hangup ignored as ailoop starts (nohup) stays ignored: a logout does not pause the run */
	if (sigaction(SIGHUP, NULL, &old) < 0 || old.sa_handler != SIG_IGN)
		sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void al_signals_forked(void)
{
	if (pipe_fds[0] >= 0) {
		close(pipe_fds[0]);
		close(pipe_fds[1]);
	}
	if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) < 0)
		pipe_fds[0] = pipe_fds[1] = -1;
	count = 0;
}

int al_signals_fd(void)
{
	return pipe_fds[0];
}

int al_signals_count(void)
{
	return count;
}

void al_signals_drain(void)
{
	char buf[64];

	while (pipe_fds[0] >= 0 && read(pipe_fds[0], buf, sizeof(buf)) > 0)
		;
}

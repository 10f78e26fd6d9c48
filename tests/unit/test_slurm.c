#include "ailoop/model/runner.h"
#include "ailoop/proc/slurm.h"
#include "ailoop/base/util.h"

#include <criterion/criterion.h>
#include <string.h>

static struct al_proc_result failed_with(int code, const char *log)
{
	struct al_proc_result r = AL_PROC_RESULT_INIT;

	r.exit_code = code;
	al_strbuf_adds(&r.log, log);
	return r;
}

Test(slurm, a_step_cancelled_by_slurm_is_slurms_failure_with_its_line)
{
	struct al_proc_result r = failed_with(143, "agent output\n"
					      "srun: Job step aborted: Waiting up to 7 seconds\n"
					      "slurmstepd-vm: error: *** STEP 13.0 ON vm CANCELLED AT "
					      "2026-11-23T21:17:07 ***\nsrun: error: vm: task 0: Terminated\n");
	char why[256];

	cr_assert(al_slurm_failed(&r, why, sizeof(why)));
	cr_assert_str_eq(why, "*** STEP 13.0 ON vm CANCELLED AT 2026-11-23T21:17:07 ***");
	al_proc_result_release(&r);
}

Test(slurm, the_agents_own_exit_and_ailoops_own_stop_are_not_slurms)
{
	struct al_proc_result r = failed_with(3, "cannot do it\n"
					      "srun: error: vm: task 0: Exited with exit code 3\n");
	char why[256];

	cr_assert_not(al_slurm_failed(&r, why, sizeof(why)));
	al_proc_result_release(&r);
	r = failed_with(0, "slurmstepd: error: *** JOB 4 ON vm CANCELLED ***\n");
	cr_assert_not(al_slurm_failed(&r, why, sizeof(why)), "exit 0 is success");
	al_proc_result_release(&r);
	r = failed_with(143, "slurmstepd: error: *** JOB 4 ON vm CANCELLED ***\n");
	r.timed_out = true;
	cr_assert_not(al_slurm_failed(&r, why, sizeof(why)), "ailoop's own timeout");
	al_proc_result_release(&r);
}

Test(slurm, argv_names_the_step_and_rounds_the_time_up_to_minutes)
{
	struct al_slurm s = { .on = true, .partition = "debug", .cpus_per_task = 2,
			      .mem_per_cpu = "1G" };
	char **argv = al_calloc(3, sizeof(char *)), **out;

	argv[0] = al_strdup("claude");
	argv[1] = al_strdup("-p");
	out = al_slurm_argv(&s, argv, "outer/inner", 61, "/work tree");
	cr_assert_str_eq(out[0], "srun");
	cr_assert_str_eq(out[1], "--job-name=outer/inner");
	cr_assert_str_eq(out[2], "--partition=debug");
	cr_assert_str_eq(out[3], "--time=2");
	cr_assert_str_eq(out[4], "--cpus-per-task=2");
	cr_assert_str_eq(out[5], "--mem-per-cpu=1G");
	cr_assert_str_eq(out[6], "--chdir=/work tree");
	cr_assert_str_eq(out[7], "--");
	cr_assert_str_eq(out[8], "sh");
	cr_assert_str_eq(out[11], "ailoop-step");
	cr_assert_str_eq(out[12], "claude");
	cr_assert_str_eq(out[13], "-p");
	cr_assert_null(out[14]);
	al_argv_free(out);
}

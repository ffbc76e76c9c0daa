/* SPDX-License-Identifier: MIT */
/* libmid.so: needs libdep.so and has no search path of its own, so libdep.so is found through the
 * program's DT_RPATH (which applies to the dependencies of dependencies) but not its DT_RUNPATH. */
int dep(void);

int mid(void)
{
    return dep();
}

/* SPDX-License-Identifier: MIT */
/* A program that needs libdep.so (or, built with -DVIA_MID, libmid.so). */
#ifdef VIA_MID
int mid(void);
#define CALL mid
#else
int dep(void);
#define CALL dep
#endif

int main(void)
{
    return CALL() > 0 ? 0 : 1;
}

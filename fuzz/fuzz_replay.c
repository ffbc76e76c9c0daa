/* SPDX-License-Identifier: MIT */
/* Replays files (or every file in folders) through LLVMFuzzerTestOneInput without libFuzzer, so
 * the kept corpus runs as a regression test in the normal and the ASan/UBSan builds.
 *
 * usage: fuzz_replay PATH...   exit 0 when every input ran, 1 when no input was found or a file
 * could not be read, 2 on bad usage. Crashes surface as the sanitizers' reports. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX_FILE (1 << 20)

static int replay_file(const char *path)
{
    int rc = -1;
    uint8_t *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open '%s'\n", path);
        goto out;
    }
    buf = malloc(REPLAY_MAX_FILE);
    if (!buf) {
        fprintf(stderr, "fuzz_replay: out of memory reading '%s'\n", path);
        goto out;
    }
    size_t n = fread(buf, 1, REPLAY_MAX_FILE, f);
    if (ferror(f)) {
        fprintf(stderr, "fuzz_replay: cannot read '%s'\n", path);
        goto out;
    }
    LLVMFuzzerTestOneInput(buf, n);
    rc = 0;
out:
    free(buf);
    if (f)
        fclose(f);
    return rc;
}

/* Replays @p path (file, or the regular files of a folder); returns inputs run or -1. */
static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_replay: no such file or folder '%s'\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path) == 0 ? 1 : -1;
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "fuzz_replay: cannot list '%s'\n", path);
        return -1;
    }
    int count = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof(full), "%s/%s", path, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(full) == 0)
                count++;
            else
                failed = 1;
        }
        free(names[i]);
    }
    free(names);
    return failed ? -1 : count;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay FILE|FOLDER...\n"
                        "Runs every input through the fuzz target once (no mutation).\n");
        return 2;
    }
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int n = replay_path(argv[i]);
        if (n < 0)
            return 1;
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "fuzz_replay: no inputs found in the given paths\n");
        return 1;
    }
    printf("fuzz_replay: %d inputs replayed without a crash\n", total);
    return 0;
}

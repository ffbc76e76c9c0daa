/* SPDX-License-Identifier: MIT */
/* One command-line grammar for every `tune` command: each command declares its options in a
 * table (name, short form, value kind with bounds and units, help, repeatable or not), and one
 * parser and one help writer work from it, so `--help` cannot drift from what is parsed.
 *
 * Grammar, the same everywhere:
 *   --name VALUE   --name=VALUE   -s VALUE   -sVALUE   --flag   --   (ends the options)
 *   -h / --help prints the generated help; `--help --json` prints the table as JSON (for tests,
 *   completion scripts and documentation); `--help --man` the help as a section of tune(1).
 * A value is checked when it is parsed, before the command touches anything: an integer or a
 * number outside its bounds, a duration without a unit it knows, a choice that is not listed, an
 * value missing — each is an error naming the
 * option, the value and what is allowed. */
#ifndef BKM_CLI_OPT_H
#define BKM_CLI_OPT_H

#include <stddef.h>
#include <stdio.h>

#include "bkm/common.h"

/** How an option's value is read and where it goes (at cfg + off). */
typedef enum bkm_cli_opt_kind {
    BKM_CLI_FLAG,      /**< no value; int at off set to 1 */
    BKM_CLI_STR,       /**< const char * at off (points into argv); empty refused unless lo < 0 */
    BKM_CLI_INT,       /**< int at off, an integer in [lo, hi] */
    BKM_CLI_I64,       /**< long long at off, an integer in [lo, hi] */
    BKM_CLI_NUM,       /**< double at off, a finite number in [lo, hi] */
    BKM_CLI_DURATION,  /**< double seconds at off: 0.5, 90s, 5m, 2h; finite, in [lo, hi] seconds */
    BKM_CLI_CHOICE,    /**< const char * at off, one of choices ("a|b|c") */
    BKM_CLI_CALL,      /**< call(cfg, opt, value, err): the command's own parser for the value */
} bkm_cli_opt_kind_t;

enum {
    BKM_CLI_REPEAT = 1u << 0,   /**< may be given more than once (BKM_CLI_CALL or STR lists) */
    BKM_CLI_HIDDEN = 1u << 1,   /**< parsed but not in --help (old spellings are listed as such) */
    BKM_CLI_REQUIRED = 1u << 2, /**< must be given: "tune CMD: --NAME is required" otherwise */
};

typedef struct bkm_cli_opt bkm_cli_opt_t;
/** Parser of a BKM_CLI_CALL option: BKM_OK, or BKM_EINVAL with err naming the value. */
typedef int (*bkm_cli_opt_fn)(void *cfg, const bkm_cli_opt_t *opt, const char *value, bkm_err_t *err);

struct bkm_cli_opt {
    const char *name;         /**< long name without dashes: "threads" (--threads) */
    char short_name;          /**< 'o' for -o, or 0 */
    bkm_cli_opt_kind_t kind;
    const char *metavar;      /**< the value's name in the help: "N", "SEC", "FILE" */
    size_t off;               /**< offsetof(config, field) of the destination */
    double lo, hi;            /**< bounds of INT, I64, NUM, DURATION */
    const char *choices;      /**< CHOICE: "native|onednn" */
    bkm_cli_opt_fn call;      /**< CALL: the value's parser */
    unsigned flags;           /**< BKM_CLI_REPEAT, BKM_CLI_HIDDEN, BKM_CLI_REQUIRED */
    const char *help;         /**< help text; '\n' starts a continuation line */
    const char *alias;        /**< an older spelling still accepted ("allowed"), or NULL */
    const char *example;      /**< a valid value for tests ("2"); NULL: derived from the kind */
};

/** A command: its options and the text around them in --help. */
typedef struct bkm_cli_cmd_spec {
    const char *name;         /**< "run" (messages say "tune run: ...") */
    const char *usage;        /**< synopsis after "usage: " (may hold '\n') */
    const char *about;        /**< paragraph(s) after the synopsis */
    const bkm_cli_opt_t *opts;
    size_t n_opts;
    const char *positional;   /**< help of positional arguments, or NULL when none are taken */
    /** Receives each positional argument in order; NULL refuses them. */
    int (*positional_fn)(void *cfg, const char *arg, bkm_err_t *err);
    const char *more;         /**< text after the options (examples, exit codes), or NULL */
} bkm_cli_cmd_spec_t;

/** The .opts and .n_opts members of a bkm_cli_cmd_spec_t from a static array of options. */
#define BKM_CLI_TABLE(arr) .opts = (arr), .n_opts = sizeof(arr) / sizeof((arr)[0])

/** The most options one command's table may hold. */
#define BKM_CLI_OPTS_MAX 128

/** One option as the command line gave it. */
typedef struct bkm_cli_given_opt {
    size_t opt;               /**< its index in the command's table */
    int argi;                 /**< the index in argv of the word that names it ("--name", "--name=V", "-sV") */
    const char *value;        /**< its value as written (points into argv); NULL for a flag */
    int by_alias;             /**< 1: given by its old spelling (bkm_cli_opt_t.alias) */
} bkm_cli_given_opt_t;

/** Which options a parse saw (bkm_cli_opt_parse_given): how often each option of the table was
 *  given, and every option given, in the order of the command line. */
typedef struct bkm_cli_given {
    unsigned count[BKM_CLI_OPTS_MAX]; /**< by table index */
    bkm_cli_given_opt_t *list;        /**< owned: bkm_cli_given_free */
    size_t n;
} bkm_cli_given_t;

/** Parse argv[1..argc) of command @p cmd into @p cfg (already holding the defaults).
 *  @return 0: parsed; 1: --help was printed to stdout (exit 0); BKM_EINVAL: err holds
 *  "tune CMD: ..." naming the option and the value (exit 2). Nothing is printed on error. */
int bkm_cli_opt_parse(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv, void *cfg, bkm_err_t *err);

/** bkm_cli_opt_parse that also records in @p given (when not NULL) which options were given,
 *  with their values as written: what a command needs to tell an option given from one left at
 *  its default, or to pass the options it was given on to another command line. @p given is
 *  filled on success (return 0); after --help or an error it holds nothing. Free it with
 *  bkm_cli_given_free in every case. BKM_ENOMEM when the list cannot be allocated. */
int bkm_cli_opt_parse_given(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv, void *cfg,
                            bkm_cli_given_t *given, bkm_err_t *err);

/** How often the option called @p name (its name, not an old spelling) was given; 0 when it was
 *  not, or when @p cmd has no such option. */
unsigned bkm_cli_given_count(const bkm_cli_cmd_spec_t *cmd, const bkm_cli_given_t *given, const char *name);

/** Release @p given's list (a zeroed or already freed one is fine). */
void bkm_cli_given_free(bkm_cli_given_t *given);

/** bkm_cli_opt_parse for a command's entry point: 0 when the command goes on; 1 when it must
 *  return *code at once (0 after --help; 2 after a parse error, whose message is on stderr). */
int bkm_cli_opt_parse_cmd(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv, void *cfg, int *code);

/** The help of @p cmd, generated from its table. */
void bkm_cli_opt_help(const bkm_cli_cmd_spec_t *cmd, FILE *f);

/** The table of @p cmd as JSON: {"command":..., "options":[{"name","short","kind","metavar",
 *  "lo","hi","choices","repeat","hidden","required","alias","example"}...], "positional": bool}. */
void bkm_cli_opt_help_json(const bkm_cli_cmd_spec_t *cmd, FILE *f);

/** The help of @p cmd as a subsection of the man page tune(1) (`--help --man`; roff, -man
 *  macros): its usage as written, its text (paragraphs filled unless indented), its options. */
void bkm_cli_opt_help_man(const bkm_cli_cmd_spec_t *cmd, FILE *f);
/** @p text (may be NULL) as roff paragraphs: a paragraph (up to a blank line) is filled unless a
 *  line of it is indented, then it is kept as written; '\', '-' and a leading '.' escaped. */
void bkm_cli_roff_text(FILE *f, const char *text);
/** @p text (may be NULL) as roff input lines for a no-fill block, escaped as bkm_cli_roff_text. */
void bkm_cli_roff_literal(FILE *f, const char *text);

/** Parse a duration: seconds ("0.5", "90s"), minutes ("5m", "5min") or hours ("2h"); finite and
 *  >= 0. Returns 0 with *sec set, or -1. */
int bkm_cli_opt_duration(const char *s, double *sec);

#endif

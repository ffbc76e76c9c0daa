/* SPDX-License-Identifier: MIT */
/* The table-driven option parser and help writer of every `tune` command (cli_opt.h). */
#include "cli_opt.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int bkm_cli_opt_duration(const char *s, double *sec)
{
    char *end;
    double v;
    if (s == NULL || s[0] == '\0' || s[0] == ' ' || s[0] == '+' || s[0] == '-')
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v) || v < 0)
        return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        *sec = v;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        *sec = v * 60;
    else if (strcmp(end, "h") == 0)
        *sec = v * 3600;
    else
        return -1;
    return isfinite(*sec) ? 0 : -1;
}

static const char *kind_name(bkm_cli_opt_kind_t k)
{
    switch (k) {
    case BKM_CLI_FLAG: return "flag";
    case BKM_CLI_STR: return "string";
    case BKM_CLI_INT: return "int";
    case BKM_CLI_I64: return "int64";
    case BKM_CLI_NUM: return "number";
    case BKM_CLI_DURATION: return "duration";
    case BKM_CLI_CHOICE: return "choice";
    case BKM_CLI_CALL: return "custom";
    }
    return "?";
}

/* Is @p v one of the '|'-separated @p choices? */
static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

/* "1..4096", "0..86400 s" for the messages and the help; empty when unbounded. */
static void range_text(const bkm_cli_opt_t *o, char *buf, size_t cap)
{
    buf[0] = '\0';
    if ((o->kind == BKM_CLI_INT || o->kind == BKM_CLI_I64) && o->hi >= 9e18)
        snprintf(buf, cap, ">= %.0f", o->lo);
    else if (o->kind == BKM_CLI_INT || o->kind == BKM_CLI_I64)
        snprintf(buf, cap, "%.0f..%.0f", o->lo, o->hi);
    else if (o->kind == BKM_CLI_NUM)
        snprintf(buf, cap, "%g..%g", o->lo, o->hi);
    else if (o->kind == BKM_CLI_DURATION)
        snprintf(buf, cap, "%g..%g s", o->lo, o->hi);
    else if (o->kind == BKM_CLI_CHOICE)
        snprintf(buf, cap, "%s", o->choices);
}

/* @p as: the spelling the user gave (the name or its old alias), for the messages. */
static int set_value(const bkm_cli_cmd_spec_t *cmd, const bkm_cli_opt_t *o, const char *as, const char *v,
                     void *cfg, bkm_err_t *err)
{
    char *dst = (char *)cfg + o->off, range[96];
    long long iv;
    double dv;
    range_text(o, range, sizeof range);
    switch (o->kind) {
    case BKM_CLI_FLAG:
        *(int *)(void *)dst = 1;
        return BKM_OK;
    case BKM_CLI_STR:
        if (v[0] == '\0' && o->lo >= 0)
            return bkm_err_set(err, BKM_EINVAL, "tune %s: --%s needs a non-empty value", cmd->name, as);
        *(const char **)(void *)dst = v;
        return BKM_OK;
    case BKM_CLI_INT:
    case BKM_CLI_I64:
        if (bkm_parse_int(v, (long long)o->lo, (long long)o->hi, &iv) != BKM_OK)
            return bkm_err_set(err, BKM_EINVAL, "tune %s: --%s '%s' is not an integer %s%s", cmd->name, as, v,
                               range[0] == '>' ? "" : "in ", range);
        if (o->kind == BKM_CLI_INT)
            *(int *)(void *)dst = (int)iv;
        else
            *(long long *)(void *)dst = iv;
        return BKM_OK;
    case BKM_CLI_NUM:
        if (bkm_parse_double(v, &dv) != BKM_OK || !isfinite(dv) || dv < o->lo || dv > o->hi)
            return bkm_err_set(err, BKM_EINVAL, "tune %s: --%s '%s' is not a number in %s", cmd->name, as, v,
                               range);
        *(double *)(void *)dst = dv;
        return BKM_OK;
    case BKM_CLI_DURATION:
        if (bkm_cli_opt_duration(v, &dv) != 0 || dv < o->lo || dv > o->hi)
            return bkm_err_set(err, BKM_EINVAL,
                               "tune %s: --%s '%s' is not a duration in %s (seconds, or with a unit: 90s, 5m, 2h)",
                               cmd->name, as, v, range);
        *(double *)(void *)dst = dv;
        return BKM_OK;
    case BKM_CLI_CHOICE:
        if (!choice_ok(o->choices, v))
            return bkm_err_set(err, BKM_EINVAL, "tune %s: --%s '%s' is not one of %s", cmd->name, as, v,
                               o->choices);
        *(const char **)(void *)dst = v;
        return BKM_OK;
    case BKM_CLI_CALL:
        if (o->call(cfg, o, v, err) < 0) {
            /* "is unknown ..." reads on from the value; anything else follows a colon */
            if (strncmp(err->msg, "tune ", 5) != 0) {
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err->msg);
                bkm_err_set(err, BKM_EINVAL, "tune %s: --%s '%s'%s%s", cmd->name, as, v,
                            strncmp(msg, "is ", 3) == 0 ? " " : ": ", msg);
            }
            return BKM_EINVAL;
        }
        return BKM_OK;
    }
    return bkm_err_set(err, BKM_EINVAL, "tune %s: --%s: unknown option kind", cmd->name, as);
}

/* The option called @p name (length @p len) by its name or its old spelling; NULL if none. */
static const bkm_cli_opt_t *find_long(const bkm_cli_cmd_spec_t *cmd, const char *name, size_t len, size_t *idx,
                                      const char **as)
{
    for (size_t i = 0; i < cmd->n_opts; i++) {
        const bkm_cli_opt_t *o = &cmd->opts[i];
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
            *idx = i;
            *as = o->name;
            return o;
        }
        if (o->alias && strlen(o->alias) == len && strncmp(o->alias, name, len) == 0) {
            *idx = i;
            *as = o->alias;
            return o;
        }
    }
    return NULL;
}

static const bkm_cli_opt_t *find_short(const bkm_cli_cmd_spec_t *cmd, char c, size_t *idx)
{
    for (size_t i = 0; i < cmd->n_opts; i++)
        if (cmd->opts[i].short_name == c) {
            *idx = i;
            return &cmd->opts[i];
        }
    return NULL;
}

/* -h/--help anywhere before "--" wins over everything else on the line: 1 when it was printed. */
static int help_asked(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv)
{
    int json = 0, help = 0, man = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        help |= strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
        json |= strcmp(argv[i], "--json") == 0;
        man |= strcmp(argv[i], "--man") == 0;
    }
    if (help) {
        if (json)
            bkm_cli_opt_help_json(cmd, stdout);
        else if (man)
            bkm_cli_opt_help_man(cmd, stdout);
        else
            bkm_cli_opt_help(cmd, stdout);
    }
    return help;
}

/* The option argv word @p a names ("--name", "--name=V", "-s", "-sV"), with *value its inline
 * value (NULL when none) and *as the spelling used; BKM_EINVAL (err set) for an unknown one or
 * a flag with a value. */
static int option_of(const bkm_cli_cmd_spec_t *cmd, const char *a, const bkm_cli_opt_t **o, size_t *idx,
                     const char **as, const char **value, bkm_err_t *err)
{
    *value = NULL;
    if (a[1] == '-') {
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        *o = find_long(cmd, a + 2, len, idx, as);
        if (*o == NULL)
            return bkm_err_set(err, BKM_EINVAL, "tune %s: unknown option '%.*s' (see tune %s --help)", cmd->name,
                               (int)(len + 2), a, cmd->name);
        if (eq != NULL) {
            if ((*o)->kind == BKM_CLI_FLAG)
                return bkm_err_set(err, BKM_EINVAL, "tune %s: --%s takes no value ('%s')", cmd->name, *as, a);
            *value = eq + 1;
        }
        return BKM_OK;
    }
    *o = find_short(cmd, a[1], idx);
    *as = *o ? (*o)->name : NULL;
    if (*o == NULL)
        return bkm_err_set(err, BKM_EINVAL, "tune %s: unknown option '-%c' (see tune %s --help)", cmd->name, a[1],
                           cmd->name);
    if (a[2] != '\0') {
        if ((*o)->kind == BKM_CLI_FLAG)
            return bkm_err_set(err, BKM_EINVAL, "tune %s: -%c takes no value ('%s')", cmd->name, a[1], a);
        *value = a + 2;
    }
    return BKM_OK;
}

static int positional(const bkm_cli_cmd_spec_t *cmd, const char *a, void *cfg, bkm_err_t *err)
{
    int rc;
    if (cmd->positional_fn == NULL)
        return bkm_err_set(err, BKM_EINVAL, "tune %s: unexpected argument '%s' (see tune %s --help)", cmd->name, a,
                           cmd->name);
    if ((rc = cmd->positional_fn(cfg, a, err)) < 0 && strncmp(err->msg, "tune ", 5) != 0)
        bkm_err_prefix(err, "tune %s", cmd->name);
    return rc;
}

int bkm_cli_opt_parse_given(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv, void *cfg,
                            bkm_cli_given_t *given, bkm_err_t *err)
{
    bkm_cli_given_t own;
    bkm_cli_given_t *g = given ? given : &own;
    int options_done = 0, rc = BKM_OK;
    memset(g, 0, sizeof *g);
    if (cmd->n_opts > BKM_CLI_OPTS_MAX)
        return bkm_err_set(err, BKM_EINVAL, "tune %s: more than %d options in its table", cmd->name,
                           BKM_CLI_OPTS_MAX);
    if (help_asked(cmd, argc, argv))
        return 1;
    /* every option takes at least one word of argv: argc entries are enough */
    if (given && (g->list = bkm_calloc(argc > 0 ? (size_t)argc : 1, sizeof *g->list)) == NULL)
        return bkm_err_set(err, BKM_ENOMEM, "tune %s: out of memory", cmd->name);
    for (int i = 1; i < argc && rc == BKM_OK; i++) {
        const char *a = argv[i], *value = NULL, *as = NULL;
        const bkm_cli_opt_t *o = NULL;
        size_t idx = 0;
        int argi = i;
        if (!options_done && strcmp(a, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (options_done || a[0] != '-' || a[1] == '\0') {
            rc = positional(cmd, a, cfg, err);
            continue;
        }
        if ((rc = option_of(cmd, a, &o, &idx, &as, &value, err)) < 0)
            break;
        if (o->kind != BKM_CLI_FLAG && value == NULL) {
            if (i + 1 >= argc) {
                rc = bkm_err_set(err, BKM_EINVAL, "tune %s: --%s needs a value (%s)", cmd->name, as,
                                 o->metavar ? o->metavar : kind_name(o->kind));
                break;
            }
            value = argv[++i];
        }
        /* a single-value option given again replaces the earlier value, in every command (scripts
         * append an override to a common line); a repeatable one adds a value */
        g->count[idx]++;
        if (given)
            g->list[g->n++] = (bkm_cli_given_opt_t){.opt = idx, .argi = argi, .value = value,
                                                    .by_alias = as != o->name};
        if (set_value(cmd, o, as, value ? value : "", cfg, err) < 0)
            rc = BKM_EINVAL;
    }
    for (size_t i = 0; i < cmd->n_opts && rc == BKM_OK; i++)
        if ((cmd->opts[i].flags & BKM_CLI_REQUIRED) && g->count[i] == 0)
            rc = bkm_err_set(err, BKM_EINVAL, "tune %s: --%s is required (see tune %s --help)", cmd->name,
                             cmd->opts[i].name, cmd->name);
    if (rc < 0 && given)
        bkm_cli_given_free(given);
    return rc < 0 ? rc : 0;
}

int bkm_cli_opt_parse(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv, void *cfg, bkm_err_t *err)
{
    return bkm_cli_opt_parse_given(cmd, argc, argv, cfg, NULL, err);
}

unsigned bkm_cli_given_count(const bkm_cli_cmd_spec_t *cmd, const bkm_cli_given_t *given, const char *name)
{
    for (size_t i = 0; given && i < cmd->n_opts && i < BKM_CLI_OPTS_MAX; i++)
        if (strcmp(cmd->opts[i].name, name) == 0)
            return given->count[i];
    return 0;
}

void bkm_cli_given_free(bkm_cli_given_t *given)
{
    if (given == NULL)
        return;
    bkm_free(given->list);
    memset(given, 0, sizeof *given);
}

int bkm_cli_opt_parse_cmd(const bkm_cli_cmd_spec_t *cmd, int argc, char **argv, void *cfg, int *code)
{
    bkm_err_t err = {0};
    int rc = bkm_cli_opt_parse(cmd, argc, argv, cfg, &err);
    if (rc == 0)
        return 0;
    if (rc < 0)
        fprintf(stderr, "%s\n", err.msg);
    *code = rc > 0 ? 0 : 2;
    return 1;
}

/* Write @p text with every line after the first indented by @p indent columns. */
static void put_indented(FILE *f, const char *text, int indent)
{
    for (const char *p = text; *p; p++) {
        fputc(*p, f);
        if (*p == '\n' && p[1] != '\0')
            fprintf(f, "%*s", indent, "");
    }
}

void bkm_cli_opt_help(const bkm_cli_cmd_spec_t *cmd, FILE *f)
{
    enum { COL = 22 };
    fprintf(f, "usage: ");
    put_indented(f, cmd->usage, 7);
    fprintf(f, "\n\n");
    if (cmd->about) {
        fputs(cmd->about, f);
        fputc('\n', f);
    }
    if (cmd->positional) {
        fputc('\n', f);
        fputs(cmd->positional, f);
        fputc('\n', f);
    }
    fprintf(f, "\noptions (--opt VALUE and --opt=VALUE both work; an option given again replaces its\n"
               "earlier value unless it is repeatable):\n");
    for (size_t i = 0; i < cmd->n_opts; i++) {
        const bkm_cli_opt_t *o = &cmd->opts[i];
        char head[96], range[96];
        int n;
        if (o->flags & BKM_CLI_HIDDEN)
            continue;
        if (o->short_name)
            n = snprintf(head, sizeof head, "  -%c, --%s%s%s", o->short_name, o->name, o->metavar ? " " : "",
                         o->metavar ? o->metavar : "");
        else
            n = snprintf(head, sizeof head, "  --%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        fputs(head, f);
        if (n >= COL)
            fprintf(f, "\n%*s", COL, "");
        else
            fprintf(f, "%*s", COL - n, "");
        put_indented(f, o->help ? o->help : "", COL);
        range_text(o, range, sizeof range);
        if (range[0] && o->kind != BKM_CLI_CHOICE)
            fprintf(f, " [%s]", range);
        if (o->flags & BKM_CLI_REPEAT)
            fprintf(f, " (repeatable)");
        if (o->flags & BKM_CLI_REQUIRED)
            fprintf(f, " (required)");
        if (o->alias)
            fprintf(f, "\n%*s(--%s, its former name, still works)", COL, "", o->alias);
        fputc('\n', f);
    }
    fprintf(f, "  -h, --help%*sthis text (--help --json: the option table as JSON)\n", COL - 12, "");
    if (cmd->more) {
        fputc('\n', f);
        fputs(cmd->more, f);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void bkm_cli_opt_help_json(const bkm_cli_cmd_spec_t *cmd, FILE *f)
{
    fprintf(f, "{\"command\":");
    json_str(f, cmd->name);
    fprintf(f, ",\"positional\":%s,\"options\":[", cmd->positional_fn ? "true" : "false");
    for (size_t i = 0; i < cmd->n_opts; i++) {
        const bkm_cli_opt_t *o = &cmd->opts[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, o->name);
        fprintf(f, ",\"short\":");
        if (o->short_name) {
            char s[2] = {o->short_name, 0};
            json_str(f, s);
        } else {
            fprintf(f, "null");
        }
        fprintf(f, ",\"kind\":\"%s\",\"metavar\":", kind_name(o->kind));
        json_str(f, o->metavar ? o->metavar : "");
        if (o->kind == BKM_CLI_INT || o->kind == BKM_CLI_I64 || o->kind == BKM_CLI_NUM || o->kind == BKM_CLI_DURATION)
            fprintf(f, ",\"lo\":%.17g,\"hi\":%.17g", o->lo, o->hi);
        if (o->choices) {
            fprintf(f, ",\"choices\":");
            json_str(f, o->choices);
        }
        fprintf(f, ",\"repeat\":%s,\"hidden\":%s,\"required\":%s", o->flags & BKM_CLI_REPEAT ? "true" : "false",
                o->flags & BKM_CLI_HIDDEN ? "true" : "false", o->flags & BKM_CLI_REQUIRED ? "true" : "false");
        if (o->alias) {
            fprintf(f, ",\"alias\":");
            json_str(f, o->alias);
        }
        if (o->example) {
            fprintf(f, ",\"example\":");
            json_str(f, o->example);
        }
        fputc('}', f);
    }
    fprintf(f, "]}\n");
}

/* ---------------------------------------------------------------------------------------- */
/* The same help as a section of the man page (roff)                                         */

/* @p n bytes of @p s escaped for roff: '\' as \e, '-' as \- (an option copied from the page is
 * the one typed), '"' as \(dq (it may sit in a quoted macro argument). */
static void roff_escaped(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            fputs("\\e", f);
        else if (s[i] == '-')
            fputs("\\-", f);
        else if (s[i] == '"')
            fputs("\\(dq", f);
        else
            fputc(s[i], f);
    }
}

/* @p n bytes of @p s as one roff input line; a leading '.' or '\'' (a request) guarded by \&. */
static void roff_line(FILE *f, const char *s, size_t n)
{
    if (n > 0 && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", f);
    roff_escaped(f, s, n);
    fputc('\n', f);
}

/* One paragraph (lines up to a blank line) of @p n bytes: filled when no line is indented (the
 * help's line breaks are the terminal's), else as written (tables, argument lists, examples). */
static void roff_paragraph(FILE *f, const char *s, size_t n)
{
    int indented = s[0] == ' ';
    for (size_t i = 0; i + 1 < n && !indented; i++)
        indented = s[i] == '\n' && s[i + 1] == ' ';
    fputs(indented ? ".PP\n.nf\n" : ".PP\n", f);
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - s) : n, b = i;
        if (!indented)
            while (b < end && s[b] == ' ')
                b++;
        roff_line(f, s + b, end - b);
        i = end + 1;
    }
    if (indented)
        fputs(".fi\n", f);
}

void bkm_cli_roff_text(FILE *f, const char *text)
{
    const char *p = text;
    while (p && *p) {
        const char *blank = strstr(p, "\n\n");
        size_t n = blank ? (size_t)(blank - p) : strlen(p);
        while (n > 0 && p[n - 1] == '\n')
            n--;
        if (n > 0)
            roff_paragraph(f, p, n);
        if (blank == NULL)
            break;
        p = blank + 2;
        while (*p == '\n')
            p++;
    }
}

/* One option as a tagged paragraph: the spellings and the value, then its help. */
static void roff_option(FILE *f, const bkm_cli_opt_t *o)
{
    char range[96], tail[160];
    int ranged;
    fputs(".TP\n", f);
    if (o->short_name)
        fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
    fputs("\\fB\\-\\-", f);
    roff_escaped(f, o->name, strlen(o->name));
    fputs("\\fR", f);
    if (o->metavar) {
        fputs(" \\fI", f);
        roff_escaped(f, o->metavar, strlen(o->metavar));
        fputs("\\fR", f);
    }
    fputc('\n', f);
    for (const char *h = o->help ? o->help : ""; *h;) {
        const char *nl = strchr(h, '\n');
        size_t n = nl ? (size_t)(nl - h) : strlen(h);
        while (n > 0 && *h == ' ')
            h++, n--;
        roff_line(f, h, n);
        h += n + (nl != NULL);
    }
    range_text(o, range, sizeof range);
    ranged = range[0] && o->kind != BKM_CLI_CHOICE;   /* a choice's values are its metavar */
    snprintf(tail, sizeof tail, "%s%s%s%s%s", ranged ? "[" : "", ranged ? range : "", ranged ? "] " : "",
             o->flags & BKM_CLI_REPEAT ? "(repeatable) " : "", o->flags & BKM_CLI_REQUIRED ? "(required)" : "");
    if (tail[0])
        roff_line(f, tail, strlen(tail));
    if (o->alias) {
        snprintf(tail, sizeof tail, "(--%s, its former name, still works)", o->alias);
        roff_line(f, tail, strlen(tail));
    }
}

void bkm_cli_opt_help_man(const bkm_cli_cmd_spec_t *cmd, FILE *f)
{
    fputs(".SS \"tune ", f);
    roff_escaped(f, cmd->name, strlen(cmd->name));
    fputs("\"\n.PP\n.nf\n", f);
    bkm_cli_roff_literal(f, cmd->usage);
    fputs(".fi\n", f);
    bkm_cli_roff_text(f, cmd->about);
    bkm_cli_roff_text(f, cmd->positional);
    for (size_t i = 0, shown = 0; i < cmd->n_opts; i++)
        if (!(cmd->opts[i].flags & BKM_CLI_HIDDEN)) {
            if (shown++ == 0)
                fputs(".PP\nOptions:\n", f);
            roff_option(f, &cmd->opts[i]);
        }
    bkm_cli_roff_text(f, cmd->more);
}

void bkm_cli_roff_literal(FILE *f, const char *text)
{
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        roff_line(f, p, n);
        p += n + (nl != NULL);
    }
}

// Example tiny-harness plugin in C, on bindings from `wit-bindgen c`.
//
// - `/dice NdM`: rolls N dice of M sides (1 <= N <= 100, 2 <= M <= 1000).
// - `/echo <text>`: replies with the text.
// - A `command.invoked.pre` policy that refuses `/echo` when the text
//   contains the word "forbidden".
//
// Ownership follows the canonical ABI: arguments belong to the callee (freed
// here), results are malloc'd and freed by the generated post-return code.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "plugin.h"

#define DICE_USAGE "usage: /dice NdM, e.g. /dice 2d6 (1-100 dice of 2-1000 sides)"
#define ECHO_USAGE "usage: /echo <text>"
#define MALFORMED "echo policy: malformed command.invoked context"

typedef exports_tiny_harness_plugin_command_invocation_t invocation_t;
typedef exports_tiny_harness_plugin_command_outcome_t outcome_t;
typedef exports_tiny_harness_plugin_command_command_error_t command_error_t;
typedef exports_tiny_harness_plugin_hook_decision_t decision_t;

static bool str_eq(const plugin_string_t *s, const char *literal) {
    return s->len == strlen(literal) && memcmp(s->ptr, literal, s->len) == 0;
}

// The parsed argument `name` with surrounding blanks removed, or NULL.
static const plugin_string_t *argument(const invocation_t *invocation, const char *name,
                                       plugin_string_t *trimmed) {
    for (size_t i = 0; i < invocation->arguments.len; i++) {
        const tiny_harness_plugin_types_argument_t *arg = &invocation->arguments.ptr[i];
        if (!str_eq(&arg->name, name)) continue;
        uint8_t *start = arg->value.ptr, *end = start + arg->value.len;
        while (start < end && isspace(*start)) start++;
        while (end > start && isspace(end[-1])) end--;
        *trimmed = (plugin_string_t){start, (size_t)(end - start)};
        return trimmed->len ? trimmed : NULL;
    }
    return NULL;
}

// Up to 4 decimal digits at `*at`, as a number; -1 when there are none or more.
static int read_number(const uint8_t **at, const uint8_t *end) {
    int value = 0, digits = 0;
    for (; *at < end && isdigit(**at); (*at)++) {
        if (++digits > 4) return -1;
        value = value * 10 + (**at - '0');
    }
    return digits ? value : -1;
}

// `NdM` within the limits, as `*count` and `*sides`.
static bool parse_dice(const plugin_string_t *spec, int *count, int *sides) {
    const uint8_t *at = spec->ptr, *end = at + spec->len;
    *count = read_number(&at, end);
    if (*count < 1 || *count > 100 || at == end || *at++ != 'd') return false;
    *sides = read_number(&at, end);
    return at == end && *sides >= 2 && *sides <= 1000;
}

// A uniform roll in 1..=sides from wasi:random (getentropy), or 0 on error.
static int roll(int sides) {
    uint32_t limit = UINT32_MAX - UINT32_MAX % (uint32_t)sides, random;
    do {
        if (getentropy(&random, sizeof random) != 0) return 0;
    } while (random >= limit);
    return 1 + (int)(random % (uint32_t)sides);
}

static bool error(command_error_t *err, uint8_t tag, const char *message) {
    err->tag = tag;
    plugin_string_dup(&err->val.usage, message); // every case holds a string
    return false;
}

// `NdM` -> "2d6: 3 + 5 = 8" with data {"rolls":[3,5],"total":8}.
static bool dice(const plugin_string_t *spec, outcome_t *ret, command_error_t *err) {
    int count, sides;
    if (!spec || !parse_dice(spec, &count, &sides))
        return error(err, TINY_HARNESS_PLUGIN_TYPES_COMMAND_ERROR_USAGE, DICE_USAGE);

    // At most 100 rolls of 4 digits each, plus separators.
    char text[1024], data[1024];
    int total = 0;
    size_t t = (size_t)snprintf(text, sizeof text, "%dd%d: ", count, sides);
    size_t d = (size_t)snprintf(data, sizeof data, "{\"rolls\":[");
    for (int i = 0; i < count; i++) {
        int value = roll(sides);
        if (!value)
            return error(err, TINY_HARNESS_PLUGIN_TYPES_COMMAND_ERROR_FAILED, "no randomness");
        total += value;
        t += (size_t)snprintf(text + t, sizeof text - t, i ? " + %d" : "%d", value);
        d += (size_t)snprintf(data + d, sizeof data - d, i ? ",%d" : "%d", value);
    }
    snprintf(text + t, sizeof text - t, " = %d", total);
    snprintf(data + d, sizeof data - d, "],\"total\":%d}", total);

    plugin_string_dup(&ret->reply.text, text);
    ret->reply.data.is_some = true;
    plugin_string_dup(&ret->reply.data.val, data);
    ret->effects = (tiny_harness_plugin_types_list_effect_t){NULL, 0};
    return true;
}

bool exports_tiny_harness_plugin_command_run(invocation_t *invocation, outcome_t *ret,
                                             command_error_t *err) {
    plugin_string_t text;
    bool ok;
    if (str_eq(&invocation->command, "dice")) {
        ok = dice(argument(invocation, "spec", &text), ret, err);
    } else if (str_eq(&invocation->command, "echo")) {
        ok = argument(invocation, "text", &text) != NULL;
        if (ok) {
            plugin_string_dup_n(&ret->reply.text, (const char *)text.ptr, text.len);
            ret->reply.data.is_some = false;
            ret->effects = (tiny_harness_plugin_types_list_effect_t){NULL, 0};
        } else {
            error(err, TINY_HARNESS_PLUGIN_TYPES_COMMAND_ERROR_USAGE, ECHO_USAGE);
        }
    } else {
        ok = error(err, TINY_HARNESS_PLUGIN_TYPES_COMMAND_ERROR_FAILED, "no body for this command");
    }
    exports_tiny_harness_plugin_command_invocation_free(invocation);
    return ok;
}

// Whether `text` has "forbidden" as a word (ASCII letters and digits,
// case-insensitive).
static bool has_forbidden_word(const char *text) {
    const char *word = "forbidden";
    size_t n = strlen(word);
    for (const char *at = text; *at;) {
        const char *start = at;
        while (isalnum((unsigned char)*at)) at++;
        if ((size_t)(at - start) == n && strncasecmp(start, word, n) == 0) return true;
        if (*at) at++;
    }
    return false;
}

static void abort_with(decision_t *ret, tiny_harness_plugin_types_abort_reason_t reason,
                       const char *message) {
    ret->tag = TINY_HARNESS_PLUGIN_TYPES_DECISION_ABORT;
    ret->val.abort.reason = reason;
    plugin_string_dup(&ret->val.abort.message, message);
}

void exports_tiny_harness_plugin_hook_handle(plugin_string_t *point, plugin_string_t *context,
                                             decision_t *ret) {
    static const char *const name_path[] = {"command", "name"};
    static const char *const text_path[] = {"command", "raw_arguments"};
    ret->tag = TINY_HARNESS_PLUGIN_TYPES_DECISION_PASS;
    if (str_eq(point, "command.invoked.pre")) {
        const char *json = (const char *)context->ptr;
        char *name = NULL, *text = NULL;
        if (!json_string_at(json, context->len, name_path, 2, &name) ||
            !json_string_at(json, context->len, text_path, 2, &text)) {
            abort_with(ret, TINY_HARNESS_PLUGIN_TYPES_ABORT_REASON_INVALID, MALFORMED);
        } else if (strcmp(name, "echo") == 0 && has_forbidden_word(text)) {
            abort_with(ret, TINY_HARNESS_PLUGIN_TYPES_ABORT_REASON_POLICY,
                       "echo refuses forbidden words");
        }
        free(name);
        free(text);
    }
    plugin_string_free(point);
    plugin_string_free(context);
}

void exports_tiny_harness_plugin_completion_complete(
    plugin_string_t *command, plugin_string_t *partial_arguments,
    exports_tiny_harness_plugin_completion_list_suggestion_t *ret) {
    *ret = (exports_tiny_harness_plugin_completion_list_suggestion_t){NULL, 0};
    plugin_string_free(command);
    plugin_string_free(partial_arguments);
}

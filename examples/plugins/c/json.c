// A minimal JSON reader (RFC 8259): walks an object path to one string.
#include "json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *at;
    const char *end;
} cursor_t;

static void skip_space(cursor_t *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r'))
        c->at++;
}

// Consumes `ch` (after whitespace) when it is next.
static bool eat(cursor_t *c, char ch) {
    skip_space(c);
    if (c->at < c->end && *c->at == ch) {
        c->at++;
        return true;
    }
    return false;
}

static int hex4(cursor_t *c) {
    if (c->end - c->at < 4) return -1;
    int value = 0;
    for (int i = 0; i < 4; i++) {
        char h = *c->at++;
        int digit = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// Reads the escape sequence after a backslash as one code point.
static bool read_escape(cursor_t *c, uint32_t *cp) {
    static const char escapes[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
    if (c->at == c->end) return false;
    char escape = *c->at++;
    const char *simple = escape ? strchr(escapes, escape) : NULL;
    if (simple) {
        *cp = (uint32_t)decoded[simple - escapes];
        return true;
    }
    int unit = escape == 'u' ? hex4(c) : -1;
    if (unit < 0) return false;
    *cp = (uint32_t)unit;
    // A high surrogate followed by \u and a low surrogate is one code point.
    if (unit >= 0xD800 && unit < 0xDC00 && c->end - c->at >= 6 && c->at[0] == '\\' &&
        c->at[1] == 'u') {
        cursor_t next = {c->at + 2, c->end};
        int low = hex4(&next);
        if (low >= 0xDC00 && low < 0xE000) {
            *cp = 0x10000 + ((uint32_t)(unit - 0xD800) << 10) + (uint32_t)(low - 0xDC00);
            c->at = next.at;
        }
    }
    return true;
}

// Reads a string at the cursor. With `out`, also stores it unescaped and
// NUL-terminated in a malloc'd buffer (never longer than the escaped form).
static bool read_string(cursor_t *c, char **out) {
    if (!eat(c, '"')) return false;
    char *buffer = out ? malloc((size_t)(c->end - c->at) + 1) : NULL;
    if (out && !buffer) return false;
    size_t n = 0;
    while (c->at < c->end) {
        char ch = *c->at++;
        uint32_t cp = (unsigned char)ch;
        if (ch == '"') {
            if (buffer) {
                buffer[n] = '\0';
                *out = buffer;
            }
            return true;
        }
        if (cp < 0x20 || (ch == '\\' && !read_escape(c, &cp))) break;
        if (buffer && ch == '\\') n += put_utf8(buffer + n, cp);
        else if (buffer) buffer[n++] = ch;
    }
    free(buffer);
    return false;
}

static bool skip_value(cursor_t *c, int depth);

// Skips an object or array; `close` is '}' or ']'.
static bool skip_container(cursor_t *c, char close, int depth) {
    if (eat(c, close)) return true;
    do {
        if (close == '}' && !(read_string(c, NULL) && eat(c, ':'))) return false;
        if (!skip_value(c, depth + 1)) return false;
    } while (eat(c, ','));
    return eat(c, close);
}

static bool skip_literal(cursor_t *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->at) < n || memcmp(c->at, word, n) != 0) return false;
    c->at += n;
    return true;
}

static bool skip_number(cursor_t *c) {
    const char *start = c->at;
    while (c->at < c->end && strchr("+-0123456789.eE", *c->at) && *c->at) c->at++;
    return c->at > start;
}

static bool skip_value(cursor_t *c, int depth) {
    if (depth > 64) return false;
    skip_space(c);
    if (c->at == c->end) return false;
    switch (*c->at) {
    case '"': return read_string(c, NULL);
    case '{': c->at++; return skip_container(c, '}', depth);
    case '[': c->at++; return skip_container(c, ']', depth);
    case 't': return skip_literal(c, "true");
    case 'f': return skip_literal(c, "false");
    case 'n': return skip_literal(c, "null");
    default: return skip_number(c);
    }
}

bool json_string_at(const char *json, size_t len, const char *const *path, size_t depth,
                    char **out) {
    cursor_t c = {json, json + len};
    for (size_t level = 0; level < depth; level++) {
        if (!eat(&c, '{')) return false;
        bool found = false;
        if (!eat(&c, '}')) {
            do {
                char *key = NULL;
                if (!read_string(&c, &key)) return false;
                found = strcmp(key, path[level]) == 0;
                free(key);
                if (!eat(&c, ':')) return false;
            } while (!found && skip_value(&c, 0) && eat(&c, ','));
        }
        if (!found) return false;
    }
    skip_space(&c);
    return c.at < c.end && *c.at == '"' && read_string(&c, out);
}

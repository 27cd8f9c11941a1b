// A minimal JSON reader: just enough to pull strings out of a hook context.
#ifndef EXAMPLE_JSON_H
#define EXAMPLE_JSON_H

#include <stdbool.h>
#include <stddef.h>

// Finds the string at `path` (object keys, outermost first, `depth` of them)
// in the JSON document `json` of `len` bytes. On success stores it, unescaped
// and NUL-terminated, in a malloc'd `*out` (the caller frees it) and returns
// true. Returns false when the document is malformed before the string is
// reached, or the path does not lead to a string.
bool json_string_at(const char *json, size_t len, const char *const *path, size_t depth,
                    char **out);

#endif

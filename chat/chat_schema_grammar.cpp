// chat_schema_grammar.cpp - chat_schema_convert (chat_grammar.h): a JSON Schema to GBNF through
// llama.cpp's own converter (common/json-schema-to-grammar.cpp, built from the pinned tree by
// cmake/ChatJinja.cmake). C++ only because the converter is; no exception crosses into C.
//
// The converter has two soft spots a server cannot take as they are: a pattern it cannot
// translate only prints a warning to stderr and accepts any string, and its errors come as
// exceptions with several lines. chat_schema_check (C) refuses unsupported patterns first; here
// every pattern is also converted on its own and a fallback to "any string" is an error, so a
// gap in that check cannot loosen the grammar silently.
#include "chat_grammar.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "json-schema-to-grammar.h"
#include "json.h"

static void set_err(char *err, size_t errsz, const std::string &msg) {
    if (err && errsz)
        std::snprintf(err, errsz, "%s", msg.c_str());
}

// The converter's messages: "JSON schema conversion failed:\nJSON schema error at #/x: why".
static std::string one_line(const char *what) {
    std::string m = what ? what : "unknown error";
    for (char &c : m)
        if (c == '\n')
            c = ' ';
    return m;
}

// A string schema with this pattern alone: the converter's own pattern rule starts with the
// string's opening quote; its fallback for a pattern it cannot translate is the plain "string"
// rule.
static bool pattern_converts(const std::string &pattern) {
    common_json s = common_json::object();
    s["type"] = "string";
    s["pattern"] = pattern;
    std::string g = json_schema_to_grammar(s, true);
    size_t at = g.find("root ::= ");
    return at != std::string::npos && g.compare(at + 9, 5, "\"\\\"\" ") == 0;
}

static bool patterns_convert(const common_json &node, std::string &bad, int depth) {
    if (depth > CHAT_SCHEMA_MAX_DEPTH * 4)
        return true; // chat_schema_check bounds the depth before this runs
    if (node.is_object()) {
        for (const auto &[key, value] : node.items()) {
            // values, not schemas: a "pattern" member in them is data
            if (key == "enum" || key == "const" || key == "default" || key == "examples")
                continue;
            if (key == "pattern" && value.is_string() && !pattern_converts(value.get<std::string>())) {
                bad = value.get<std::string>();
                return false;
            }
            if (!patterns_convert(value, bad, depth + 1))
                return false;
        }
    } else if (node.is_array()) {
        for (const auto &value : node)
            if (!patterns_convert(value, bad, depth + 1))
                return false;
    }
    return true;
}

extern "C" int chat_schema_convert(const char *schema, size_t len, char **gbnf, char *err,
                                   size_t errsz) {
    if (gbnf)
        *gbnf = nullptr;
    if (!schema || !gbnf) {
        set_err(err, errsz, "no schema");
        return -1;
    }
    try {
        common_json s = common_json::parse(std::string(schema, len));
        std::string bad;
        if (!patterns_convert(s, bad, 0)) {
            set_err(err, errsz, "the pattern \"" + bad + "\" has no grammar equivalent in llama.cpp's "
                                "converter (anchor it with ^...$; no lookaround, no \\d \\w \\s classes)");
            return -1;
        }
        std::string g = json_schema_to_grammar(s, /* force_gbnf */ true);
        if (g.size() > CHAT_SCHEMA_MAX_GRAMMAR) {
            set_err(err, errsz, "the schema's grammar would be " + std::to_string(g.size()) +
                                    " bytes, over the limit of " +
                                    std::to_string(CHAT_SCHEMA_MAX_GRAMMAR) + ": simplify the schema");
            return -1;
        }
        char *out = static_cast<char *>(std::malloc(g.size() + 1));
        if (!out) {
            set_err(err, errsz, "out of memory");
            return -1;
        }
        std::memcpy(out, g.c_str(), g.size() + 1);
        *gbnf = out;
        return 0;
    } catch (const std::exception &e) {
        set_err(err, errsz, one_line(e.what()));
    } catch (...) {
        set_err(err, errsz, "JSON schema conversion failed");
    }
    return -1;
}

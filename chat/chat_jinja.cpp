// chat_jinja.cpp - the C API of chat_jinja.h over llama.cpp's Jinja engine (common/jinja).
// C++ only because the engine is; no exception crosses into C: every entry point catches all.
#include "chat_jinja.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>

#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/runtime.h"
#include "jinja/value.h"
#include "json.h"

// What the template was compiled from is kept for the engine's error messages (line:column).
// Rendering only reads both (the engine's AST is const while executing), hence thread-safe,
// except for the engine's strftime_now: it calls localtime(), whose result is one static buffer
// (ThreadSanitizer sees the race). Templates that name it render one at a time, under
// clock_lock; the others (Gemma 4's) concurrently.
struct chat_jinja {
    jinja::program prog;
    std::string source;
    bool reads_clock;
};

static std::mutex clock_lock;

static void set_err(char *err, size_t errsz, const std::string &msg) {
    if (err && errsz)
        std::snprintf(err, errsz, "%s", msg.c_str());
}

static void trim_in_place(std::string &s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    size_t e = s.find_last_not_of(" \t\r\n");
    s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The engine's messages span several lines (a banner, the statement, an excerpt of the source
// with a caret): a caller wants one line. raise_exception(msg) comes back as msg itself, the way
// transformers reports it (TemplateError(msg)); anything else as "why (where)".
static std::string one_line_error(const char *what) {
    std::string m = what ? what : "unknown error";
    static const char raised[] = "Jinja Exception: ";
    size_t r = m.find(raised);
    if (r != std::string::npos) // the engine appends nothing after the template's message
        return m.substr(r + sizeof raised - 1);
    static const char exec_at[] = "While executing ";
    size_t w = m.rfind(exec_at);
    size_t e = m.rfind("\nError: ");
    if (w != std::string::npos && e != std::string::npos && e > w) {
        std::string where = m.substr(w + sizeof exec_at - 1);
        where = where.substr(0, where.find(" in source:"));
        std::string why = m.substr(e + 8);
        trim_in_place(why);
        return "template error: " + why + " (" + where + ")";
    }
    // lexer/parser: "parser: message\n...excerpt...\n   ^": the message, then the excerpt
    trim_in_place(m);
    size_t nl = m.find('\n');
    if (nl != std::string::npos) {
        std::string excerpt = m.substr(nl + 1);
        excerpt = excerpt.substr(0, excerpt.find('\n'));
        trim_in_place(excerpt);
        m = m.substr(0, nl) + " near " + excerpt;
    }
    return "template error: " + m;
}

extern "C" chat_jinja *chat_jinja_compile(const char *source, char *err, size_t errsz) {
    if (!source) {
        set_err(err, errsz, "no template text");
        return nullptr;
    }
    chat_jinja *t = nullptr;
    try {
        t = new chat_jinja();
        jinja::lexer lexer;
        jinja::lexer_result tokens = lexer.tokenize(source);
        t->prog = jinja::parse_from_tokens(tokens);
        t->source = tokens.source;
        t->reads_clock = t->source.find("strftime_now") != std::string::npos;
        return t;
    } catch (const std::bad_alloc &) {
        set_err(err, errsz, "out of memory compiling the chat template");
    } catch (const std::exception &ex) {
        set_err(err, errsz, one_line_error(ex.what()));
    } catch (...) {
        set_err(err, errsz, "template error: unknown failure compiling the chat template");
    }
    delete t;
    return nullptr;
}

extern "C" char *chat_jinja_render(const chat_jinja *t, const char *context_json, char *err,
                                   size_t errsz) {
    if (!t || !context_json) {
        set_err(err, errsz, "no template or no context");
        return nullptr;
    }
    try {
        common_json ctx_json;
        try {
            ctx_json = common_json::parse(context_json);
        } catch (const std::exception &ex) {
            set_err(err, errsz,
                    std::string("chat template context is not valid JSON: ") + ex.what());
            return nullptr;
        }
        if (!ctx_json.is_object()) {
            set_err(err, errsz, "chat template context must be a JSON object (its members are "
                                "the template's variables)");
            return nullptr;
        }
        std::unique_lock<std::mutex> one_at_a_time(clock_lock, std::defer_lock);
        if (t->reads_clock)
            one_at_a_time.lock();
        // One context per render: the variables the template sets live there, never in t.
        jinja::context ctx(t->source);
        // mark_input=false: we want the text, not llama-server's user-input spans
        jinja::global_from_json(ctx, ctx_json, false);
        jinja::runtime runtime(ctx);
        const jinja::value results = runtime.execute(t->prog);
        const std::string text = jinja::runtime::gather_string_parts(results)->as_string().str();
        char *out = static_cast<char *>(std::malloc(text.size() + 1));
        if (!out) {
            set_err(err, errsz, "out of memory rendering the chat template");
            return nullptr;
        }
        std::memcpy(out, text.data(), text.size());
        out[text.size()] = '\0';
        return out;
    } catch (const std::bad_alloc &) {
        set_err(err, errsz, "out of memory rendering the chat template");
    } catch (const std::exception &ex) {
        set_err(err, errsz, one_line_error(ex.what()));
    } catch (...) {
        set_err(err, errsz, "template error: unknown failure rendering the chat template");
    }
    return nullptr;
}

extern "C" void chat_jinja_free(chat_jinja *t) {
    delete t;
}

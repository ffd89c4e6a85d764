// chat_common_strings.cpp - the three string helpers llama.cpp's JSON Schema converter
// (common/json-schema-to-grammar.cpp, common/json-schema.cpp) declares in common/common.h and
// defines in common/common.cpp. common.cpp itself is not compiled (cmake/ChatJinja.cmake): it
// pulls in the CLI, download and logging stack. Same contracts as common.h states them: join with
// a separator; split on every occurrence of a delimiter (empty parts kept, one part when absent);
// n copies of a string.
#include <string>
#include <vector>

std::string string_join(const std::vector<std::string> &values, const std::string &separator);
std::vector<std::string> string_split(const std::string &str, const std::string &delimiter);
std::string string_repeat(const std::string &str, size_t n);

std::string string_join(const std::vector<std::string> &values, const std::string &separator) {
    std::string out;
    for (size_t i = 0; i < values.size(); i++) {
        if (i)
            out += separator;
        out += values[i];
    }
    return out;
}

std::vector<std::string> string_split(const std::string &str, const std::string &delimiter) {
    std::vector<std::string> parts;
    if (delimiter.empty()) // common.cpp would loop forever; nothing here splits on ""
        return {str};
    size_t from = 0;
    for (size_t at; (at = str.find(delimiter, from)) != std::string::npos; from = at + delimiter.size())
        parts.push_back(str.substr(from, at - from));
    parts.push_back(str.substr(from));
    return parts;
}

std::string string_repeat(const std::string &str, size_t n) {
    std::string out;
    out.reserve(str.size() * n);
    while (n--)
        out += str;
    return out;
}

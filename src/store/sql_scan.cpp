#include "store/sql_scan.hpp"

#include <cctype>
#include <string>

namespace fencelock::detail {
namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The next keyword of `sql` (after blanks and comments), upper-cased, and what follows it.
std::string_view next_word(std::string_view& sql, std::string& upper) {
    sql = skip_blank_and_comments(sql);
    std::size_t n = 0;
    while (n < sql.size() && is_word_char(sql[n])) ++n;
    upper.clear();
    for (std::size_t i = 0; i < n; ++i) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
    const std::string_view word = sql.substr(0, n);
    sql.remove_prefix(n);
    return word;
}

}  // namespace

std::string_view skip_blank_and_comments(std::string_view sql) {
    for (;;) {
        while (!sql.empty() && std::isspace(static_cast<unsigned char>(sql.front())) != 0) sql.remove_prefix(1);
        if (sql.starts_with("--")) {
            const auto end = sql.find('\n');
            sql.remove_prefix(end == std::string_view::npos ? sql.size() : end + 1);
        } else if (sql.starts_with("/*")) {
            const auto end = sql.find("*/", 2);
            sql.remove_prefix(end == std::string_view::npos ? sql.size() : end + 2);
        } else {
            return sql;
        }
    }
}

bool controls_transaction(std::string_view sql) {
    std::string first, second;
    next_word(sql, first);
    if (first == "BEGIN" || first == "START" || first == "COMMIT" || first == "END" || first == "ABORT") return true;
    if (first == "ROLLBACK") {
        next_word(sql, second);
        if (second == "TRANSACTION" || second == "WORK") next_word(sql, second);
        return second != "TO";
    }
    if (first == "PREPARE") {
        next_word(sql, second);
        return second == "TRANSACTION";
    }
    return false;
}

}  // namespace fencelock::detail

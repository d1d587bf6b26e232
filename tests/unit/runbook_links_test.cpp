// Every alert in ops/prometheus/alerts.yml names the instance and job that fire it, and links a
// runbook section that exists: a page at 3 a.m. must say where, and its link must not 404 into
// the top of docs/RUNBOOK.md. The rules file is read with a small line parser for the layout it
// has (one `- alert:` item per rule); a rule this parser cannot read fails the test.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "unit/source_text.hpp"

namespace fencelock::test_support {
namespace {

std::string trim(std::string s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    const auto last = s.find_last_not_of(" \t\r");
    return s.substr(first, last - first + 1);
}

std::string unquote(std::string s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        return s.substr(1, s.size() - 2);
    return s;
}

/// One rule as the file spells it: `key: value` pairs of the rule, of its `labels` (block or
/// `{k: v}` flow form) and of its `annotations`.
struct AlertRule {
    std::string name;
    std::map<std::string, std::string> fields;
    std::map<std::string, std::string> labels;
    std::map<std::string, std::string> annotations;
};

void parse_flow_map(const std::string& text, std::map<std::string, std::string>& into) {
    // {severity: warning, team: x}
    const std::string inner = trim(text.substr(1, text.rfind('}') - 1));
    std::stringstream items(inner);
    for (std::string item; std::getline(items, item, ',');) {
        const auto colon = item.find(':');
        if (colon != std::string::npos) into[trim(item.substr(0, colon))] = unquote(trim(item.substr(colon + 1)));
    }
}

std::vector<AlertRule> parse_alert_rules(const std::string& yaml) {
    std::vector<AlertRule> rules;
    std::stringstream lines(yaml);
    std::map<std::string, std::string>* block = nullptr;  // labels or annotations being read
    std::size_t block_indent = 0;
    for (std::string line; std::getline(lines, line);) {
        const std::string text = trim(line);
        if (text.empty() || text.starts_with('#')) continue;
        const std::size_t indent = line.find_first_not_of(' ');
        if (text.starts_with("- alert:")) {
            rules.push_back(AlertRule{.name = trim(text.substr(8)), .fields = {}, .labels = {}, .annotations = {}});
            block = nullptr;
            continue;
        }
        if (rules.empty()) continue;
        if (block && indent <= block_indent) block = nullptr;
        const auto colon = text.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = trim(text.substr(0, colon));
        const std::string value = trim(text.substr(colon + 1));
        if (block) {
            (*block)[key] = unquote(value);
        } else if (key == "labels" || key == "annotations") {
            auto& into = key == "labels" ? rules.back().labels : rules.back().annotations;
            if (value.starts_with('{')) parse_flow_map(value, into);
            else {
                block = &into;
                block_indent = indent;
            }
        } else {
            rules.back().fields[key] = unquote(value);
        }
    }
    return rules;
}

/// GitHub's anchor for a Markdown heading: lower case, punctuation dropped (except `-` and
/// `_`), spaces to `-`; a repeated heading gets `-1`, `-2`, ...
std::set<std::string> heading_anchors(const std::string& markdown) {
    std::set<std::string> anchors;
    std::map<std::string, int> seen;
    std::stringstream lines(markdown);
    bool in_code = false;
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("```")) in_code = !in_code;
        if (in_code || !line.starts_with('#')) continue;
        const std::string title = trim(line.substr(line.find_first_not_of('#')));
        std::string slug;
        for (unsigned char c : title) {
            if (std::isalnum(c) || c == '-' || c == '_') slug += static_cast<char>(std::tolower(c));
            else if (c == ' ') slug += '-';
        }
        const int n = seen[slug]++;
        anchors.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
    }
    return anchors;
}

/// What is wrong with one rule (empty: nothing). `anchors`: the runbook's headings.
std::vector<std::string> rule_problems(const AlertRule& rule, const std::set<std::string>& anchors) {
    std::vector<std::string> problems;
    const std::string& expr = rule.fields.count("expr") ? rule.fields.at("expr") : "";
    if (expr.empty()) problems.push_back("no expr");
    // An aggregation keeps only the labels it names: each one must keep instance and job.
    static const std::regex by_clause(R"(\b(by|without)\s*\(([^)]*)\))");
    for (auto it = std::sregex_iterator(expr.begin(), expr.end(), by_clause); it != std::sregex_iterator(); ++it) {
        const std::string kind = (*it)[1],
                          names = "," + std::regex_replace((*it)[2].str(), std::regex(R"(\s)"), "") + ",";
        for (const char* label : {"instance", "job"}) {
            const bool named = names.find("," + std::string(label) + ",") != std::string::npos;
            if (kind == "by" ? !named : named) problems.push_back(kind + " (" + (*it)[2].str() + ") drops " + label);
        }
    }
    static const std::regex bare_aggregation(R"(\b(sum|max|min|avg|count)\s*\()");
    if (std::regex_search(expr, bare_aggregation))
        problems.push_back("an aggregation without by (...) drops instance and job");
    if (!rule.labels.count("severity")) problems.push_back("no severity label");
    else if (rule.labels.at("severity") != "warning" && rule.labels.at("severity") != "critical")
        problems.push_back("severity is " + rule.labels.at("severity"));
    const std::string summary = rule.annotations.count("summary") ? rule.annotations.at("summary") : "";
    if (summary.empty()) problems.push_back("no summary");
    for (const char* label : {"$labels.instance", "$labels.job"})
        if (summary.find(label) == std::string::npos) problems.push_back("summary does not show " + std::string(label));
    if (rule.annotations.count("runbook")) problems.push_back("annotation runbook: the key is runbook_url");
    const std::string url = rule.annotations.count("runbook_url") ? rule.annotations.at("runbook_url") : "";
    const std::string page = "docs/RUNBOOK.md#";
    if (!url.starts_with(page)) problems.push_back("runbook_url '" + url + "' is not " + page + "<anchor>");
    else if (!anchors.count(url.substr(page.size()))) problems.push_back("runbook_url '" + url + "': no such heading");
    return problems;
}

const std::string& alert_rules() {
    static const std::string text = source_text("ops/prometheus/alerts.yml");
    return text;
}

const std::set<std::string>& runbook_anchors() {
    static const std::set<std::string> anchors = heading_anchors(source_text("docs/RUNBOOK.md"));
    return anchors;
}

TEST(RunbookLinks, EveryAlertShowsItsInstanceAndJobAndLinksAnExistingRunbookSection) {
    const auto rules = parse_alert_rules(alert_rules());
    // Every rule the file holds was read: a rule the parser missed would be checked by nothing.
    static const std::regex item(R"(\n\s*- alert:)");
    const auto items =
        std::distance(std::sregex_iterator(alert_rules().begin(), alert_rules().end(), item), std::sregex_iterator());
    ASSERT_GE(rules.size(), 9u);
    EXPECT_EQ(static_cast<long>(rules.size()), items);
    for (const auto& rule : rules)
        for (const auto& problem : rule_problems(rule, runbook_anchors()))
            ADD_FAILURE() << rule.name << ": " << problem;
}

TEST(RunbookLinks, AnchorsFollowGithubSlugs) {
    EXPECT_EQ(heading_anchors("# Runbook\n## Job retries for business errors\n### Redis: unavailable (TLS)\n"),
              (std::set<std::string>{"runbook", "job-retries-for-business-errors", "redis-unavailable-tls"}));
    EXPECT_EQ(heading_anchors("## Alerts\n```\n# not a heading\n```\n## Alerts\n"),
              (std::set<std::string>{"alerts", "alerts-1"}));
    EXPECT_TRUE(runbook_anchors().count("redis-unavailable"));
}

// The checker refuses what the rules must not do.
TEST(RunbookLinks, CheckerNoticesBrokenLinksAndDroppedLabels) {
    const auto rules = parse_alert_rules(R"yaml(groups:
  - name: g
    rules:
      - alert: Good
        expr: sum by (instance, job, source) (rate(fencelock_redis_errors_total[5m])) > 0
        labels: {severity: critical}
        annotations:
          summary: "Redis fails on {{ $labels.instance }} ({{ $labels.job }})"
          runbook_url: docs/RUNBOOK.md#redis-unavailable
      - alert: DropsInstance
        expr: sum by (source) (rate(fencelock_redis_errors_total[5m])) > 0
        labels:
          severity: warning
        annotations:
          summary: "on {{ $labels.instance }} ({{ $labels.job }})"
          runbook_url: docs/RUNBOOK.md#redis-unavailable
      - alert: DeadLink
        expr: increase(fencelock_fence_rejected_total[15m]) > 3
        labels: {severity: warning}
        annotations:
          summary: "on {{ $labels.instance }} ({{ $labels.job }})"
          runbook_url: docs/RUNBOOK.md#job-retries
      - alert: OldKey
        expr: sum(rate(fencelock_lock_renew_total[5m])) > 0
        annotations:
          summary: "renewals fail"
          runbook: docs/RUNBOOK.md#renewal-failures
)yaml");
    ASSERT_EQ(rules.size(), 4u);
    EXPECT_EQ(rules[1].labels.at("severity"), "warning");
    EXPECT_TRUE(rule_problems(rules[0], runbook_anchors()).empty());
    EXPECT_EQ(rule_problems(rules[1], runbook_anchors()),
              (std::vector<std::string>{"by (source) drops instance", "by (source) drops job"}));
    EXPECT_EQ(rule_problems(rules[2], runbook_anchors()),
              (std::vector<std::string>{"runbook_url 'docs/RUNBOOK.md#job-retries': no such heading"}));
    EXPECT_EQ(rule_problems(rules[3], runbook_anchors()).size(), 6u);  // no by, no severity, 2 labels, key, url
}

}  // namespace
}  // namespace fencelock::test_support

// Parse errors of the command line as error objects: CLI11 says "A subcommand is required"
// for `fencelock frobnicate` and puts the flag at fault only inside its message; operators
// (and scripts) need the unknown name, the valid ones, and `field`.
#include <cctype>
#include <string>
#include <vector>

#include "cli.hpp"

namespace fencelock::cli {
namespace {

/// The subcommand the parse reached: the root, or the last subcommand chosen under it.
const CLI::App& deepest(const CLI::App& root) {
    const CLI::App* app = &root;
    for (auto subs = app->get_subcommands(); !subs.empty(); subs = app->get_subcommands()) app = subs.back();
    return *app;
}

std::string command_path(const CLI::App& app) {
    // The root's name is argv[0], whatever path the binary was started by.
    if (app.get_parent() == nullptr) return "fencelock";
    return command_path(*app.get_parent()) + " " + app.get_name();
}

std::string valid_subcommands(const CLI::App& app) {
    std::string names;
    // Hidden ones (an empty group, e.g. demo-worker) are internal.
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); }))
        names += (names.empty() ? "" : ", ") + sub->get_name();
    return names;
}

/// How InputError names arguments: flags as typed, positionals in capitals (RESOURCE, CMD).
std::string field_name(std::string name) {
    if (name.starts_with("-")) return name;
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return name == "COMMAND" ? "CMD" : name;
}

/// The flag or argument a CLI11 message starts with ("--lease is required", "--wait: 1
/// required TEXT missing", "resource: given after --"), or the first unexpected argument.
std::string field_of(const CLI::ParseError& e, const CLI::App& root) {
    const std::string message = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
        // Fallthrough hands arguments a subcommand does not know up to the root.
        const auto extras = root.remaining(true);
        return extras.empty() ? std::string() : extras.front();
    }
    std::size_t end = std::string::npos;
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) end = message.find(" is required");
    else if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr)
        end = message.find(" excludes ");  // "-n excludes --wait"
    else end = message.find(':');
    if (end == std::string::npos || end == 0) return {};
    const std::string name = message.substr(0, end);
    if (name.find(' ') != std::string::npos) return {};
    return field_name(name);
}

}  // namespace

int usage_failure(const CLI::App& root, const CLI::ParseError& e) {
    const CLI::App& app = deepest(root);
    const bool needs_subcommand = app.get_require_subcommand_min() > 0 && app.get_subcommands().empty();
    if (needs_subcommand) {
        const auto left = root.remaining(true);  // an unknown name falls through to the root
        std::string unknown;
        for (const auto& arg : left)
            if (!arg.starts_with("-")) {
                unknown = arg;
                break;
            }
        const std::string where = command_path(app);
        const std::string valid = "valid subcommands: " + valid_subcommands(app) + " (see " + where + " --help)";
        if (unknown.empty())
            return fail(exit_invalid_input, "invalid_input", where + " needs a subcommand; " + valid, "SUBCOMMAND",
                        "missing_subcommand");
        return fail(exit_invalid_input, "invalid_input",
                    "unknown subcommand '" + unknown + "' of " + where + "; " + valid, "SUBCOMMAND",
                    "unknown_subcommand");
    }
    return fail(exit_invalid_input, "invalid_input", e.what(), field_of(e, root));
}

}  // namespace fencelock::cli

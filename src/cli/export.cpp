// `ollie export RUN --storage URL -o RUN.db` (a run of a shared database copied into a run
// database file, for `ollie report`, `ollie serve` or `--resume`) and `ollie import RUN.db
// --storage URL --run NAME` (a run file copied into a shared database, for workers to go on
// with it); docs/distributed.md, "Moving runs".
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "store/store.h"

namespace ollie::cli {

namespace {

void add_storage_flags(CLI::App* cmd, MoveVerbs& v) {
  cmd->add_option("--storage", v.storage,
                  "the shared database: postgresql://USER@HOST/DB (the password from PGPASSWORD "
                  "or ~/.pgpass; env OLLIE_STORAGE)")
      ->envname("OLLIE_STORAGE")
      ->required();
}

}  // namespace

std::unique_ptr<MoveVerbs> add_move_verbs(CLI::App& app) {
  auto v = std::make_unique<MoveVerbs>();
  v->exp = app.add_subcommand(
      "export",
      "copy a run of a shared database into a run database file (for ollie report, "
      "ollie serve or --resume)");
  v->exp->add_option("run", v->run, "the run's name (its --run)")->required();
  add_storage_flags(v->exp, *v);
  v->exp->add_option("-o,--out", v->file, "the run database file to write (must not exist)")
      ->required();
  v->imp = app.add_subcommand(
      "import",
      "copy a run database file into a shared database as a new run, for workers "
      "(ollie optimize SPEC --storage URL --run NAME) to go on with it");
  v->imp->add_option("file", v->file, "the run database file (RUN.db)")->required();
  add_storage_flags(v->imp, *v);
  v->imp->add_option("--run", v->run, "the new run's name in the database")->required();
  return v;
}

bool MoveVerbs::given() const { return exp->parsed() || imp->parsed(); }

int MoveVerbs::run_verb() const {
  const store::Location shared = store::Location::parse(storage, run);
  if (!shared.postgres())
    throw UserError("--storage " + storage +
                    ": export and import move a run between a file and a PostgreSQL database; "
                    "give postgresql://...");
  const store::Location file_place = store::Location::parse("sqlite:" + file, "");
  if (exp->parsed()) {
    store::Store::copy(shared, file_place);
    std::cout << fmt::format("wrote {} (run {} of {})\n", file, run, shared.describe());
  } else {
    store::Store::copy(file_place, shared);
    std::cout << fmt::format("imported {} as run {} into {}\n", file, run, shared.describe());
  }
  return 0;
}

}  // namespace ollie::cli

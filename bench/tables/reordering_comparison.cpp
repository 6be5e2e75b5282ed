// The partitioner comparison of block-angular reordering (kernels/tables/block_angular.h,
// docs/methods tabular.md §2): our multilevel and single-level reorderings against Zoltan's parallel
// hypergraph partitioner (PHG), METIS and Scotch, at the same number of blocks k and the same imbalance
// ε, on table constraint matrices built in memory. For every partition the linking size is counted by
// our net_cut, one definition for every tool, and the imbalance is measured (largest block over the
// mean block, minus 1), whatever the tool promised.
//
// How each tool sees the matrix A. Ours and Zoltan PHG partition the hypergraph of the form: in the
// dual form the rows are the vertices and the columns the nets, in the primal form the other way
// round, and PHG minimises the number of cut nets (PHG_CUT_OBJECTIVE=HYPEREDGES), which is the
// linking size. METIS (METIS_PartGraphKway) and Scotch (SCOTCH_graphPart) partition graphs, so they
// get the row graph of the dual form, rows adjacent when they share a column, edge weight = shared
// columns (the entries of PPᵀ, P = A's pattern); they minimise the weighted edge cut, a proxy of the
// linking size, and are run on the dual form only.
//
// Timing: steady_clock around each tool's partitioning call, median of --repeat runs; building the
// tool's input (Zoltan's structure, parameters and id arrays; the row graph; Scotch's graph and
// strategy) is timed apart as "setup". Ours takes the matrix as it is, so its setup is none and its
// hypergraph is built inside its timed call. --threads (default 1) bounds our TBB threads; Zoltan
// runs on one MPI process, METIS and Scotch on one thread, so the default compares one core with one.
//
// Seeds: ours, METIS (METIS_OPTION_SEED) and Scotch (a context of its own: one thread, a fixed seed)
// give the same partition on every repeat. Zoltan 3.x as Debian ships it (Trilinos 13.2) has no seed
// parameter: its random stream starts from a fixed value in every process and advances with every
// call, so a run of this program with the same flags is repeatable, but a Zoltan row depends on the
// rows run before it and its repeats differ. Every row reports the linking size and imbalance of its
// first repeat; the JSON lists the linking size of every repeat.
//
// Instances: the named table shapes of instance_generator.h (16x16x16x16, 13x13x13x13, 13x13x7x7, the
// small 13x13x13, 16x16x16, 13x13x7) and two random hierarchies of the size of the public bts4 instance
// (n ≈ 36 000, m ≈ 36 000): three random_tree_dimension trees of depth 3, 3 to 5 children and unary
// probability 0.2, seeds 1 and 18; or a Matrix Market file (--input). Exit codes: 0; 2 for bad flags; 3
// and 5 for an input file that is malformed or cannot be read; 1 when a tool fails or returns an
// invalid partition.

#include <metis.h>
#include <mpi.h>
#include <scotch.h>
#include <tbb/global_control.h>
#include <zoltan.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/atomic_output.h"
#include "io/matrix_market.h"
#include "kernels/core/csr_matrix.h"
#include "kernels/core/error.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/instance_generator.h"

namespace {

using sdc::CsrMatrix;
using sdc::CsrView;
using sdc::tables::BlockAngularForm;
using Clock = std::chrono::steady_clock;

constexpr const char* kProgram = "sdc_reordering_comparison";

/// A partitioner failed or returned something that is not a partition into k blocks.
class ToolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- instances ------------------------------------------------------------------------------------

struct InstanceSpec {
  std::string name;
  std::function<CsrMatrix()> build;
};

CsrMatrix shape_matrix(const std::string& shape) {
  return sdc::tables::constraint_matrix(sdc::tables::shape_dimensions(shape));
}

/// Three random hierarchies whose table has about the size of bts4 for the seeds used here.
CsrMatrix random_hierarchy_matrix(std::uint64_t seed) {
  const sdc::tables::RandomTreeOptions tree{
      .depth = 3, .branching_min = 3, .branching_max = 5, .unary_probability = 0.2};
  std::vector<sdc::tables::DimensionEquations> dimensions;
  for (std::uint64_t d = 0; d < 3; ++d)
    dimensions.push_back(sdc::tables::random_tree_dimension("d" + std::to_string(d + 1), tree, seed, d));
  return sdc::tables::constraint_matrix(dimensions);
}

std::vector<InstanceSpec> generated_instances() {
  std::vector<InstanceSpec> instances;
  for (const char* shape : {"16x16x16x16", "13x13x13x13", "13x13x7x7"})
    instances.push_back({shape, [shape] { return shape_matrix(shape); }});
  for (const std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{18}})
    instances.push_back({"random-" + std::to_string(seed), [seed] { return random_hierarchy_matrix(seed); }});
  for (const char* shape : {"13x13x13", "16x16x16", "13x13x7"})
    instances.push_back({shape, [shape] { return shape_matrix(shape); }});
  return instances;
}

// ---- options --------------------------------------------------------------------------------------

const std::vector<std::string> kTools = {"multilevel", "single-level", "zoltan-phg", "metis-kway", "scotch"};

/// The tools that partition hypergraphs and so run on both forms; the graph partitioners run on the dual.
bool runs_primal(const std::string& tool) { return tool != "metis-kway" && tool != "scotch"; }

struct ComparisonOptions {
  std::vector<std::string> instances;
  std::string input;  ///< a Matrix Market file compared instead of the generated instances
  std::vector<std::int32_t> blocks{2, 4, 8};
  std::vector<std::string> forms{"dual", "primal"};
  std::vector<std::string> tools = kTools;
  double imbalance = 0.05;
  int repeat = 3;
  std::uint64_t seed = 1;
  int threads = 1;
  std::string json;
};

BlockAngularForm parse_form(const std::string& form) {
  return form == "primal" ? BlockAngularForm::kPrimal : BlockAngularForm::kDual;
}

void check_options(const ComparisonOptions& options, const std::vector<InstanceSpec>& known) {
  if (!options.input.empty() && !options.instances.empty())
    throw sdc::UsageError("--input and --instances exclude each other: the file replaces the generated instances");
  for (const auto& name : options.instances)
    if (std::none_of(known.begin(), known.end(), [&](const InstanceSpec& spec) { return spec.name == name; })) {
      std::string names;
      for (const auto& spec : known) names += (names.empty() ? "" : ", ") + spec.name;
      throw sdc::UsageError("--instances: unknown instance '" + name + "'; the instances are " + names);
    }
  for (const auto blocks : options.blocks)
    if (blocks < 2) throw sdc::UsageError("--blocks: every k must be at least 2");
  for (const auto& form : options.forms)
    if (form != "dual" && form != "primal") throw sdc::UsageError("--forms: '" + form + "' is neither dual nor primal");
  for (const auto& tool : options.tools)
    if (std::find(kTools.begin(), kTools.end(), tool) == kTools.end())
      throw sdc::UsageError("--tools: unknown tool '" + tool +
                            "'; the tools are multilevel, single-level, zoltan-phg, metis-kway, scotch");
  if (!(options.imbalance > 0.0 && options.imbalance < 1.0)) throw sdc::UsageError("--imbalance must lie in (0, 1)");
  if (options.repeat < 1) throw sdc::UsageError("--repeat must be at least 1");
  if (options.threads < 1) throw sdc::UsageError("--threads must be at least 1");
}

// ---- timing ---------------------------------------------------------------------------------------

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

/// One run of a tool: its partition of the vertices and the seconds of its two phases.
struct ToolRun {
  std::vector<std::int32_t> vertex_block;
  std::optional<double> setup_seconds;  ///< none when the tool takes the matrix as it is
  double partition_seconds = 0.0;
};

// ---- the partitioners -----------------------------------------------------------------------------

/// A matrix and its form: the hypergraph to partition, as vertices → nets (A in the dual form, Aᵀ in
/// the primal form), and the original matrix, which net_cut counts on.
struct Problem {
  CsrView matrix;
  BlockAngularForm form = BlockAngularForm::kDual;
  CsrView vertex_nets;
  CsrView net_vertices;
  std::int32_t blocks = 2;
  double imbalance = 0.05;
  std::uint64_t seed = 1;
};

ToolRun run_ours(const Problem& problem, sdc::tables::ReorderingAlgorithm algorithm) {
  sdc::tables::ReorderingOptions options;
  options.blocks = problem.blocks;
  options.form = problem.form;
  options.algorithm = algorithm;
  options.imbalance = problem.imbalance;
  options.seed = problem.seed;
  const auto start = Clock::now();
  const sdc::tables::BlockAngularOrdering ordering = sdc::tables::reorder_block_angular(problem.matrix, options);
  ToolRun run;
  run.partition_seconds = seconds_since(start);
  if (const auto problem_found = sdc::tables::block_pattern_problem(problem.matrix, ordering))
    throw ToolError("the ordering breaks its block pattern: " + *problem_found);
  run.vertex_block = problem.form == BlockAngularForm::kDual ? ordering.row_block : ordering.column_block;
  return run;
}

// Zoltan asks for the hypergraph through callbacks; they copy from arrays prepared in Zoltan's types.
struct ZoltanHypergraph {
  std::vector<ZOLTAN_ID_TYPE> vertex_ids;
  std::vector<int> pin_offsets;
  std::vector<ZOLTAN_ID_TYPE> pins;  ///< the nets of each vertex
};

int zoltan_vertex_count(void* data, int* error) {
  *error = ZOLTAN_OK;
  return static_cast<int>(static_cast<const ZoltanHypergraph*>(data)->vertex_ids.size());
}

void zoltan_vertex_list(void* data, int /*global_id_entries*/, int /*local_id_entries*/, ZOLTAN_ID_PTR global_ids,
                        ZOLTAN_ID_PTR local_ids, int /*weight_dimension*/, float* /*weights*/, int* error) {
  const auto& hypergraph = *static_cast<const ZoltanHypergraph*>(data);
  std::copy(hypergraph.vertex_ids.begin(), hypergraph.vertex_ids.end(), global_ids);
  std::copy(hypergraph.vertex_ids.begin(), hypergraph.vertex_ids.end(), local_ids);
  *error = ZOLTAN_OK;
}

void zoltan_pin_sizes(void* data, int* lists, int* pins, int* format, int* error) {
  const auto& hypergraph = *static_cast<const ZoltanHypergraph*>(data);
  *lists = static_cast<int>(hypergraph.vertex_ids.size());
  *pins = static_cast<int>(hypergraph.pins.size());
  *format = ZOLTAN_COMPRESSED_VERTEX;
  *error = ZOLTAN_OK;
}

void zoltan_pin_lists(void* data, int /*global_id_entries*/, int lists, int pins, int format, ZOLTAN_ID_PTR list_ids,
                      int* list_offsets, ZOLTAN_ID_PTR pin_ids, int* error) {
  const auto& hypergraph = *static_cast<const ZoltanHypergraph*>(data);
  if (format != ZOLTAN_COMPRESSED_VERTEX || lists != static_cast<int>(hypergraph.vertex_ids.size()) ||
      pins != static_cast<int>(hypergraph.pins.size())) {
    *error = ZOLTAN_FATAL;
    return;
  }
  std::copy(hypergraph.vertex_ids.begin(), hypergraph.vertex_ids.end(), list_ids);
  std::copy(hypergraph.pin_offsets.begin(), hypergraph.pin_offsets.end() - 1, list_offsets);
  std::copy(hypergraph.pins.begin(), hypergraph.pins.end(), pin_ids);
  *error = ZOLTAN_OK;
}

void set_zoltan_parameter(Zoltan_Struct* zoltan, const char* name, const std::string& value) {
  if (Zoltan_Set_Param(zoltan, name, value.c_str()) != ZOLTAN_OK)
    throw ToolError(std::string("Zoltan_Set_Param rejected ") + name + "=" + value);
}

ToolRun run_zoltan(const Problem& problem) {
  const auto setup_start = Clock::now();
  ZoltanHypergraph hypergraph;
  const auto vertices = static_cast<std::size_t>(problem.vertex_nets.rows);
  hypergraph.vertex_ids.resize(vertices);
  for (std::size_t v = 0; v < vertices; ++v) hypergraph.vertex_ids[v] = static_cast<ZOLTAN_ID_TYPE>(v);
  hypergraph.pin_offsets.assign(problem.vertex_nets.row_offsets.begin(), problem.vertex_nets.row_offsets.end());
  hypergraph.pins.assign(problem.vertex_nets.column_indices.begin(), problem.vertex_nets.column_indices.end());

  Zoltan_Struct* zoltan = Zoltan_Create(MPI_COMM_WORLD);
  if (zoltan == nullptr) throw ToolError("Zoltan_Create failed");
  struct Destroy {
    Zoltan_Struct** zoltan;
    ~Destroy() { Zoltan_Destroy(zoltan); }
  } destroy{&zoltan};
  set_zoltan_parameter(zoltan, "DEBUG_LEVEL", "0");
  set_zoltan_parameter(zoltan, "LB_METHOD", "HYPERGRAPH");
  set_zoltan_parameter(zoltan, "HYPERGRAPH_PACKAGE", "PHG");
  set_zoltan_parameter(zoltan, "LB_APPROACH", "PARTITION");
  set_zoltan_parameter(zoltan, "NUM_GID_ENTRIES", "1");
  set_zoltan_parameter(zoltan, "NUM_LID_ENTRIES", "1");
  set_zoltan_parameter(zoltan, "NUM_GLOBAL_PARTS", std::to_string(problem.blocks));
  std::ostringstream tolerance;
  tolerance.precision(17);
  tolerance << 1.0 + problem.imbalance;
  set_zoltan_parameter(zoltan, "IMBALANCE_TOL", tolerance.str());
  set_zoltan_parameter(zoltan, "OBJ_WEIGHT_DIM", "0");
  set_zoltan_parameter(zoltan, "EDGE_WEIGHT_DIM", "0");
  // The number of cut nets is the linking size; PHG's default, connectivity − 1, counts a net cut into
  // three blocks twice.
  set_zoltan_parameter(zoltan, "PHG_CUT_OBJECTIVE", "HYPEREDGES");
  set_zoltan_parameter(zoltan, "RETURN_LISTS", "PARTITION ASSIGNMENTS");
  if (Zoltan_Set_Num_Obj_Fn(zoltan, zoltan_vertex_count, &hypergraph) != ZOLTAN_OK ||
      Zoltan_Set_Obj_List_Fn(zoltan, zoltan_vertex_list, &hypergraph) != ZOLTAN_OK ||
      Zoltan_Set_HG_Size_CS_Fn(zoltan, zoltan_pin_sizes, &hypergraph) != ZOLTAN_OK ||
      Zoltan_Set_HG_CS_Fn(zoltan, zoltan_pin_lists, &hypergraph) != ZOLTAN_OK)
    throw ToolError("Zoltan rejected a query function");
  ToolRun run;
  run.setup_seconds = seconds_since(setup_start);

  int changes = 0;
  int global_id_entries = 0;
  int local_id_entries = 0;
  int imports = 0;
  int exports = 0;
  ZOLTAN_ID_PTR import_global = nullptr;
  ZOLTAN_ID_PTR import_local = nullptr;
  ZOLTAN_ID_PTR export_global = nullptr;
  ZOLTAN_ID_PTR export_local = nullptr;
  int* import_processes = nullptr;
  int* import_parts = nullptr;
  int* export_processes = nullptr;
  int* export_parts = nullptr;
  const auto start = Clock::now();
  const int status = Zoltan_LB_Partition(zoltan, &changes, &global_id_entries, &local_id_entries, &imports,
                                         &import_global, &import_local, &import_processes, &import_parts, &exports,
                                         &export_global, &export_local, &export_processes, &export_parts);
  run.partition_seconds = seconds_since(start);
  struct FreeLists {
    ZOLTAN_ID_PTR *import_global, *import_local, *export_global, *export_local;
    int **import_processes, **import_parts, **export_processes, **export_parts;
    ~FreeLists() {
      Zoltan_LB_Free_Part(import_global, import_local, import_processes, import_parts);
      Zoltan_LB_Free_Part(export_global, export_local, export_processes, export_parts);
    }
  } free_lists{&import_global,    &import_local, &export_global,    &export_local,
               &import_processes, &import_parts, &export_processes, &export_parts};
  if (status != ZOLTAN_OK) throw ToolError("Zoltan_LB_Partition returned " + std::to_string(status));
  // "PARTITION ASSIGNMENTS" lists every vertex with its block in the export lists.
  if (exports != static_cast<int>(vertices)) throw ToolError("Zoltan_LB_Partition did not assign every vertex");
  run.vertex_block.assign(vertices, -1);
  for (int e = 0; e < exports; ++e) {
    const auto vertex = static_cast<std::size_t>(export_global[e]);
    if (vertex >= vertices) throw ToolError("Zoltan_LB_Partition returned an unknown vertex id");
    run.vertex_block[vertex] = export_parts[e];
  }
  return run;
}

/// The row graph of the dual form in the index type of METIS or Scotch: vertices are A's rows, two rows
/// are adjacent when they share a column, and the edge weight is the number of shared columns. Built
/// row by row with a sparse accumulator; its size is Σ_j |N_j|², linear in A for the bounded column
/// counts of table constraint matrices.
template <class Index>
struct RowGraph {
  std::vector<Index> offsets{0};
  std::vector<Index> neighbours;
  std::vector<Index> weights;
};

template <class Index>
RowGraph<Index> row_graph(const CsrView& row_columns, const CsrView& column_rows) {
  RowGraph<Index> graph;
  const auto rows = static_cast<std::size_t>(row_columns.rows);
  graph.offsets.reserve(rows + 1);
  std::vector<std::int64_t> shared(rows, 0);
  std::vector<std::int64_t> touched;
  for (std::int64_t row = 0; row < row_columns.rows; ++row) {
    for (const std::int64_t column : row_columns.row_columns(row))
      for (const std::int64_t other : column_rows.row_columns(column)) {
        if (other == row) continue;
        if (shared[static_cast<std::size_t>(other)]++ == 0) touched.push_back(other);
      }
    for (const std::int64_t other : touched) {
      graph.neighbours.push_back(static_cast<Index>(other));
      graph.weights.push_back(static_cast<Index>(shared[static_cast<std::size_t>(other)]));
      shared[static_cast<std::size_t>(other)] = 0;
    }
    touched.clear();
    graph.offsets.push_back(static_cast<Index>(graph.neighbours.size()));
  }
  return graph;
}

ToolRun run_metis(const Problem& problem) {
  const auto setup_start = Clock::now();
  RowGraph<idx_t> graph = row_graph<idx_t>(problem.vertex_nets, problem.net_vertices);
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  // ufactor: the largest block may weigh (1 + ufactor / 1000) times the mean.
  options[METIS_OPTION_UFACTOR] = static_cast<idx_t>(std::lround(problem.imbalance * 1000.0));
  options[METIS_OPTION_SEED] = static_cast<idx_t>(problem.seed);
  idx_t vertices = static_cast<idx_t>(problem.vertex_nets.rows);
  idx_t constraints = 1;
  idx_t parts = problem.blocks;
  idx_t edge_cut = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(vertices), 0);
  ToolRun run;
  run.setup_seconds = seconds_since(setup_start);

  const auto start = Clock::now();
  const int status =
      METIS_PartGraphKway(&vertices, &constraints, graph.offsets.data(), graph.neighbours.data(), nullptr, nullptr,
                          graph.weights.data(), &parts, nullptr, nullptr, options, &edge_cut, part.data());
  run.partition_seconds = seconds_since(start);
  if (status != METIS_OK) throw ToolError("METIS_PartGraphKway returned " + std::to_string(status));
  run.vertex_block.assign(part.begin(), part.end());
  return run;
}

// Scotch's objects, released in reverse order of creation (the bound graph before its context).
class ScotchObjects {
 public:
  ScotchObjects() = default;
  ScotchObjects(const ScotchObjects&) = delete;
  ScotchObjects& operator=(const ScotchObjects&) = delete;
  ~ScotchObjects() {
    if (bound_made_) SCOTCH_graphExit(&bound_graph);
    if (context_made_) SCOTCH_contextExit(&context);
    if (strategy_made_) SCOTCH_stratExit(&strategy);
    if (graph_made_) SCOTCH_graphExit(&graph);
  }

  void init() {
    graph_made_ = SCOTCH_graphInit(&graph) == 0;
    strategy_made_ = SCOTCH_stratInit(&strategy) == 0;
    context_made_ = SCOTCH_contextInit(&context) == 0;
    bound_made_ = SCOTCH_graphInit(&bound_graph) == 0;
    if (!graph_made_ || !strategy_made_ || !context_made_ || !bound_made_)
      throw ToolError("Scotch could not initialise its graph, strategy or context");
  }

  SCOTCH_Graph graph;
  SCOTCH_Strat strategy;
  SCOTCH_Context context;
  SCOTCH_Graph bound_graph;  ///< the graph as the context's threads and random generator see it

 private:
  bool graph_made_ = false;
  bool strategy_made_ = false;
  bool context_made_ = false;
  bool bound_made_ = false;
};

ToolRun run_scotch(const Problem& problem) {
  const auto setup_start = Clock::now();
  RowGraph<SCOTCH_Num> graph = row_graph<SCOTCH_Num>(problem.vertex_nets, problem.net_vertices);
  ScotchObjects scotch;
  scotch.init();
  const auto vertices = static_cast<SCOTCH_Num>(problem.vertex_nets.rows);
  if (SCOTCH_graphBuild(&scotch.graph, 0, vertices, graph.offsets.data(), nullptr, nullptr, nullptr,
                        static_cast<SCOTCH_Num>(graph.neighbours.size()), graph.neighbours.data(),
                        graph.weights.data()) != 0)
    throw ToolError("SCOTCH_graphBuild failed");
  // SCOTCH_STRATBALANCE holds the largest block to (1 + ε) × the mean; the default strategy treats ε
  // loosely (0.053 at ε = 0.05 on 13x13x7 dual k = 8), which would not be a comparison at equal imbalance.
  if (SCOTCH_stratGraphMapBuild(&scotch.strategy, SCOTCH_STRATBALANCE, problem.blocks, problem.imbalance) != 0)
    throw ToolError("SCOTCH_stratGraphMapBuild failed");
  // Through its default context (threads, a shared random state) Scotch 7 gave different cuts for the
  // same call (13x13x7 dual k = 4: 382, 341, 374). A context of its own with one thread, a private
  // random generator and a fixed seed gives the same partition every time, on one core like the others.
  if (SCOTCH_contextOptionSetNum(&scotch.context, SCOTCH_OPTIONNUMDETERMINISTIC, 1) != 0 ||
      SCOTCH_contextOptionSetNum(&scotch.context, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1) != 0 ||
      SCOTCH_contextRandomClone(&scotch.context) != 0 || SCOTCH_contextThreadSpawn(&scotch.context, 1, nullptr) != 0 ||
      SCOTCH_contextBindGraph(&scotch.context, &scotch.graph, &scotch.bound_graph) != 0)
    throw ToolError("Scotch could not set up a single-threaded, seeded context");
  SCOTCH_contextRandomSeed(&scotch.context, static_cast<SCOTCH_Num>(problem.seed));
  SCOTCH_contextRandomReset(&scotch.context);
  std::vector<SCOTCH_Num> part(static_cast<std::size_t>(vertices), 0);
  ToolRun run;
  run.setup_seconds = seconds_since(setup_start);

  const auto start = Clock::now();
  const int status = SCOTCH_graphPart(&scotch.bound_graph, problem.blocks, &scotch.strategy, part.data());
  run.partition_seconds = seconds_since(start);
  if (status != 0) throw ToolError("SCOTCH_graphPart returned " + std::to_string(status));
  run.vertex_block.assign(part.begin(), part.end());
  return run;
}

ToolRun run_tool(const std::string& tool, const Problem& problem) {
  if (tool == "multilevel") return run_ours(problem, sdc::tables::ReorderingAlgorithm::kMultilevel);
  if (tool == "single-level") return run_ours(problem, sdc::tables::ReorderingAlgorithm::kSingleLevel);
  if (tool == "zoltan-phg") return run_zoltan(problem);
  if (tool == "metis-kway") return run_metis(problem);
  return run_scotch(problem);
}

// ---- results --------------------------------------------------------------------------------------

struct ResultRow {
  std::string instance;
  std::int64_t rows = 0;     ///< m
  std::int64_t columns = 0;  ///< n
  std::int64_t nonzeros = 0;
  std::string form;
  std::int32_t blocks = 0;
  std::string tool;
  std::int64_t linking = 0;  ///< of the first repeat
  std::vector<std::int64_t> linking_per_repeat;
  double imbalance = 0.0;  ///< of the first repeat
  std::optional<double> setup_seconds;
  double seconds = 0.0;
  std::optional<double> linking_over_phg;  ///< this linking size over Zoltan PHG's on the same problem

  double linking_percent() const { return 100.0 * static_cast<double>(linking) / static_cast<double>(columns); }
};

/// The largest block over the mean block, minus 1, after checking that every vertex has a block.
double measured_imbalance(const std::vector<std::int32_t>& vertex_block, std::int32_t blocks) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(blocks), 0);
  for (const std::int32_t block : vertex_block) {
    if (block < 0 || block >= blocks)
      throw ToolError("a vertex was put in block " + std::to_string(block) + ", outside 0 .. " +
                      std::to_string(blocks - 1));
    ++sizes[static_cast<std::size_t>(block)];
  }
  const double mean = static_cast<double>(vertex_block.size()) / static_cast<double>(blocks);
  return static_cast<double>(*std::max_element(sizes.begin(), sizes.end())) / mean - 1.0;
}

/// Runs `tool` `repeat` times: the linking size and imbalance of the first partition, every repeat's
/// linking size, the medians of the setup and partitioning seconds.
void measure(const std::string& tool, const Problem& problem, int repeat, ResultRow& row) {
  std::vector<double> setups;
  std::vector<double> partitions;
  for (int r = 0; r < repeat; ++r) {
    const ToolRun run = run_tool(tool, problem);
    if (run.vertex_block.size() != static_cast<std::size_t>(problem.vertex_nets.rows))
      throw ToolError("the partition does not cover every vertex");
    const double imbalance = measured_imbalance(run.vertex_block, problem.blocks);
    const std::int64_t linking = sdc::tables::net_cut(problem.matrix, problem.form, run.vertex_block);
    if (r == 0) {
      row.linking = linking;
      row.imbalance = imbalance;
    }
    row.linking_per_repeat.push_back(linking);
    if (run.setup_seconds) setups.push_back(*run.setup_seconds);
    partitions.push_back(run.partition_seconds);
  }
  if (!setups.empty()) row.setup_seconds = median(setups);
  row.seconds = median(partitions);
}

std::string format_seconds(const std::optional<double>& seconds) {
  if (!seconds) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", *seconds);
  return text;
}

void print_header() {
  std::printf("%-12s %7s %7s %8s %-6s %2s %-12s %7s %7s %9s %8s %8s %7s\n", "instance", "n", "m", "nnz", "form", "k",
              "tool", "linking", "100l/n", "imbalance", "setup_s", "seconds", "l/l_phg");
}

void print_row(const ResultRow& row) {
  const std::string ratio = row.linking_over_phg ? std::to_string(*row.linking_over_phg).substr(0, 5) : "-";
  std::printf("%-12s %7lld %7lld %8lld %-6s %2d %-12s %7lld %7.2f %9.4f %8s %8.4f %7s\n", row.instance.c_str(),
              static_cast<long long>(row.columns), static_cast<long long>(row.rows),
              static_cast<long long>(row.nonzeros), row.form.c_str(), row.blocks, row.tool.c_str(),
              static_cast<long long>(row.linking), row.linking_percent(), row.imbalance,
              format_seconds(row.setup_seconds).c_str(), row.seconds, ratio.c_str());
  std::fflush(stdout);
}

nlohmann::json to_json(const ResultRow& row) {
  const auto optional = [](const std::optional<double>& value) -> nlohmann::json {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  return {{"instance", row.instance},
          {"n", row.columns},
          {"m", row.rows},
          {"nnz", row.nonzeros},
          {"form", row.form},
          {"k", row.blocks},
          {"tool", row.tool},
          {"linking", row.linking},
          {"linking_per_repeat", row.linking_per_repeat},
          {"linking_percent_of_n", row.linking_percent()},
          {"imbalance", row.imbalance},
          {"setup_seconds", optional(row.setup_seconds)},
          {"seconds", row.seconds},
          {"linking_over_zoltan_phg", optional(row.linking_over_phg)}};
}

std::string versions(float zoltan_version) {
  char text[160];
  std::snprintf(text, sizeof text, "Zoltan %.2f (PHG), METIS %d.%d.%d, Scotch %d.%d.%d",
                static_cast<double>(zoltan_version), METIS_VER_MAJOR, METIS_VER_MINOR, METIS_VER_SUBMINOR,
                SCOTCH_VERSION, SCOTCH_RELEASE, SCOTCH_PATCHLEVEL);
  return text;
}

// ---- the comparison -------------------------------------------------------------------------------

std::vector<ResultRow> compare(const ComparisonOptions& options, const std::vector<InstanceSpec>& instances) {
  std::vector<ResultRow> results;
  print_header();
  for (const auto& spec : instances) {
    if (!options.instances.empty() &&
        std::find(options.instances.begin(), options.instances.end(), spec.name) == options.instances.end())
      continue;
    const CsrMatrix matrix = spec.build();
    const CsrMatrix transposed = matrix.transposed();
    for (const auto& form_text : options.forms) {
      const BlockAngularForm form = parse_form(form_text);
      for (const std::int32_t blocks : options.blocks) {
        Problem problem{.matrix = matrix.view(),
                        .form = form,
                        .vertex_nets = form == BlockAngularForm::kDual ? matrix.view() : transposed.view(),
                        .net_vertices = form == BlockAngularForm::kDual ? transposed.view() : matrix.view(),
                        .blocks = blocks,
                        .imbalance = options.imbalance,
                        .seed = options.seed};
        const std::size_t first_row = results.size();
        std::optional<std::int64_t> phg_linking;
        for (const auto& tool : options.tools) {
          if (form == BlockAngularForm::kPrimal && !runs_primal(tool)) continue;
          ResultRow row;
          row.instance = spec.name;
          row.rows = matrix.rows();
          row.columns = matrix.columns();
          row.nonzeros = matrix.entry_count();
          row.form = form_text;
          row.blocks = blocks;
          row.tool = tool;
          try {
            measure(tool, problem, options.repeat, row);
          } catch (const std::exception& error) {
            throw ToolError(tool + " on " + spec.name + " " + form_text + " k=" + std::to_string(blocks) + ": " +
                            error.what());
          }
          if (tool == "zoltan-phg") phg_linking = row.linking;
          results.push_back(row);
        }
        // Zoltan's row may come after others: the ratios are filled in, then the group printed.
        for (std::size_t r = first_row; r < results.size(); ++r) {
          if (phg_linking && *phg_linking > 0)
            results[r].linking_over_phg = static_cast<double>(results[r].linking) / static_cast<double>(*phg_linking);
          print_row(results[r]);
        }
      }
    }
  }
  return results;
}

int run_comparison(int argc, char** argv, float zoltan_version) {
  ComparisonOptions options;
  std::vector<InstanceSpec> instances = generated_instances();
  CLI::App app{
      "Block-angular reordering against Zoltan PHG, METIS and Scotch: linking size, imbalance and seconds "
      "at the same k and imbalance (bench/tables/reordering_comparison.cpp)",
      kProgram};
  app.add_option("--instances", options.instances, "instances to run (default: all)")->delimiter(',');
  app.add_option("--input", options.input, "compare on this Matrix Market file instead of the generated instances")
      ->type_name("FILE");
  app.add_option("--blocks", options.blocks, "numbers of blocks k (default 2,4,8)")->delimiter(',');
  app.add_option("--forms", options.forms, "dual, primal or both (default both; METIS and Scotch: dual only)")
      ->delimiter(',');
  app.add_option("--tools", options.tools,
                 "tools to run (default: multilevel, single-level, zoltan-phg, metis-kway, scotch)")
      ->delimiter(',');
  app.add_option("--imbalance", options.imbalance, "ε: largest block at most (1 + ε) × the mean (default 0.05)");
  app.add_option("--repeat", options.repeat, "timed runs per tool; the median is reported (default 3)");
  app.add_option("--seed", options.seed, "seed of ours, METIS and Scotch (default 1)");
  app.add_option("--threads", options.threads, "TBB threads of our reordering (default 1)");
  app.add_option("--json", options.json, "also write the table as JSON to FILE")->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    throw sdc::UsageError(error.what());
  }
  check_options(options, instances);
  if (!options.input.empty()) {
    const std::filesystem::path input = options.input;
    instances = {{input.filename().string(), [input] { return sdc::io::read_matrix_market(input); }}};
  }
  if (!options.json.empty()) sdc::io::ensure_output_directory_writable(options.json);

  const tbb::global_control thread_limit(tbb::global_control::max_allowed_parallelism,
                                         static_cast<std::size_t>(options.threads));
  std::printf("# %s; imbalance %.3f, repeat %d (median), seed %llu, our threads %d\n", versions(zoltan_version).c_str(),
              options.imbalance, options.repeat, static_cast<unsigned long long>(options.seed), options.threads);
  const std::vector<ResultRow> results = compare(options, instances);

  if (!options.json.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : results) rows.push_back(to_json(row));
    const nlohmann::json document{{"tools", versions(zoltan_version)}, {"imbalance", options.imbalance},
                                  {"repeat", options.repeat},          {"seed", options.seed},
                                  {"threads", options.threads},        {"rows", rows}};
    sdc::io::write_file_atomically(options.json, document.dump(2) + "\n", sdc::io::FilePermissions{0644});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Zoltan needs MPI; the comparison runs on one process.
  MPI_Init(&argc, &argv);
  int processes = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  int code = 0;
  try {
    float zoltan_version = 0.0F;
    if (processes != 1) throw sdc::UsageError("run on one MPI process (without mpirun, or with -n 1)");
    if (Zoltan_Initialize(argc, argv, &zoltan_version) != ZOLTAN_OK) throw ToolError("Zoltan_Initialize failed");
    code = run_comparison(argc, argv, zoltan_version);
  } catch (const sdc::Error& error) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, error.what());
    code = static_cast<int>(error.code());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, error.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}

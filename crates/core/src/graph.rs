//! A typed state graph: nodes, static edges, conditional routes, an entry and
//! `END`. A loop is an edge back; no agent writes its own `while`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::state::State;
use crate::step::Step;
use crate::{Error, Result};

/// The name routes return to end the run.
pub const END: &str = "__end__";

/// A node: async work over the state, through the step context.
pub type NodeFn<S> = Arc<dyn for<'a> Fn(&'a mut S, &'a mut Step) -> BoxFuture<'a, Result<()>> + Send + Sync>;
/// A conditional route: picks the next node from the state after the node ran.
pub type RouteFn<S> = Arc<dyn Fn(&S) -> String + Send + Sync>;

enum Next<S> {
    Edge(String),
    /// The route and the targets it may return (checked at compile time).
    Route(RouteFn<S>, Vec<String>),
}

/// Builder; `compile()` checks it.
pub struct Graph<S> {
    name: String,
    nodes: BTreeMap<String, NodeFn<S>>,
    next: BTreeMap<String, Next<S>>,
    entry: Option<String>,
}

impl<S: State> Graph<S> {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), nodes: BTreeMap::new(), next: BTreeMap::new(), entry: None }
    }

    /// Adds a node. Pass an async fn as `|s, step| Box::pin(plan(s, step))`.
    pub fn node<F>(mut self, name: &str, f: F) -> Self
    where
        F: for<'a> Fn(&'a mut S, &'a mut Step) -> BoxFuture<'a, Result<()>> + Send + Sync + 'static,
    {
        self.nodes.insert(name.to_string(), Arc::new(f));
        self
    }

    /// After `from`, always go to `to` (a node or `END`).
    pub fn edge(mut self, from: &str, to: &str) -> Self {
        self.next.insert(from.to_string(), Next::Edge(to.to_string()));
        self
    }

    /// After `from`, go where `route` says; `targets` lists every name it may return.
    pub fn route<F>(mut self, from: &str, targets: &[&str], route: F) -> Self
    where
        F: Fn(&S) -> String + Send + Sync + 'static,
    {
        let targets = targets.iter().map(|t| t.to_string()).collect();
        self.next.insert(from.to_string(), Next::Route(Arc::new(route), targets));
        self
    }

    pub fn entry(mut self, name: &str) -> Self {
        self.entry = Some(name.to_string());
        self
    }

    /// Checks that the entry and every target exist, every node has a way
    /// out, and every node is reachable from the entry.
    pub fn compile(self) -> Result<CompiledGraph<S>> {
        let name = &self.name;
        let entry = self.entry.clone().ok_or_else(|| Error::Graph(format!("graph `{name}` has no entry node: call .entry(name)")))?;
        if !self.nodes.contains_key(&entry) {
            return Err(Error::Graph(format!("graph `{name}`: entry `{entry}` is not a node")));
        }
        for (from, next) in &self.next {
            if !self.nodes.contains_key(from) {
                return Err(Error::Graph(format!("graph `{name}`: edge from unknown node `{from}`")));
            }
            for target in next.targets() {
                if target != END && !self.nodes.contains_key(target) {
                    return Err(Error::Graph(format!("graph `{name}`: `{from}` leads to unknown node `{target}`")));
                }
            }
        }
        for node in self.nodes.keys() {
            if !self.next.contains_key(node) {
                return Err(Error::Graph(format!("graph `{name}`: node `{node}` has no outgoing edge or route (use END to stop)")));
            }
        }
        let mut seen = BTreeSet::from([entry.clone()]);
        let mut todo = vec![entry.clone()];
        while let Some(n) = todo.pop() {
            for t in self.next.get(&n).map(|x| x.targets()).unwrap_or_default() {
                if t != END && seen.insert(t.clone()) {
                    todo.push(t.clone());
                }
            }
        }
        if let Some(lost) = self.nodes.keys().find(|n| !seen.contains(*n)) {
            return Err(Error::Graph(format!("graph `{name}`: node `{lost}` is unreachable from entry `{entry}`")));
        }
        Ok(CompiledGraph { name: self.name, nodes: self.nodes, next: self.next, entry })
    }
}

impl<S> Next<S> {
    fn targets(&self) -> Vec<&String> {
        match self {
            Next::Edge(t) => vec![t],
            Next::Route(_, ts) => ts.iter().collect(),
        }
    }
}

/// A checked graph, ready for the runner.
pub struct CompiledGraph<S> {
    name: String,
    nodes: BTreeMap<String, NodeFn<S>>,
    next: BTreeMap<String, Next<S>>,
    entry: String,
}

impl<S> CompiledGraph<S> {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn entry(&self) -> &str {
        &self.entry
    }

    pub(crate) fn node(&self, name: &str) -> Result<&NodeFn<S>> {
        self.nodes
            .get(name)
            .ok_or_else(|| Error::Graph(format!("graph `{}` has no node `{name}` (the session was saved by a different version of the agent)", self.name)))
    }

    /// Where to go after `from`, given the state the node left.
    pub(crate) fn next_after(&self, from: &str, state: &S) -> Result<Option<String>> {
        let target = match self.next.get(from) {
            Some(Next::Edge(t)) => t.clone(),
            Some(Next::Route(f, targets)) => {
                let t = f(state);
                if !targets.contains(&t) {
                    return Err(Error::Graph(format!("route after `{from}` returned `{t}`, which it did not declare as a target")));
                }
                t
            }
            None => return Err(Error::Graph(format!("node `{from}` has no outgoing edge"))),
        };
        Ok((target != END).then_some(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Fields;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct S {
        n: u32,
    }
    impl State for S {
        fn fields(&self, f: &mut Fields<'_>) {
            f.value("n", &self.n);
        }
    }

    fn noop<'a>(_: &'a mut S, _: &'a mut Step) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }

    fn err(g: Graph<S>) -> String {
        match g.compile() {
            Ok(_) => panic!("graph should not compile"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn compile_accepts_a_loop_with_a_route_to_end() {
        let g = Graph::<S>::new("t").node("a", noop).node("b", noop).entry("a").edge("a", "b").route("b", &["a", END], |s| {
            if s.n > 2 {
                END.into()
            } else {
                "a".into()
            }
        });
        let g = g.compile().unwrap();
        assert_eq!(g.next_after("b", &S { n: 3 }).unwrap(), None);
        assert_eq!(g.next_after("b", &S { n: 0 }).unwrap().as_deref(), Some("a"));
    }

    #[test]
    fn compile_rejects_unknown_targets_unreachable_nodes_and_missing_entry() {
        let e = err(Graph::<S>::new("t").node("a", noop).entry("a").edge("a", "nope"));
        assert!(e.contains("unknown node `nope`"), "{e}");
        let e = err(Graph::<S>::new("t").node("a", noop).node("b", noop).entry("a").edge("a", END).edge("b", END));
        assert!(e.contains("`b` is unreachable"), "{e}");
        let e = err(Graph::<S>::new("t").node("a", noop).edge("a", END));
        assert!(e.contains("no entry"), "{e}");
        let e = err(Graph::<S>::new("t").node("a", noop).entry("a"));
        assert!(e.contains("no outgoing edge"), "{e}");
        let e = err(Graph::<S>::new("t").node("a", noop).entry("a").route("a", &["ghost", END], |_| END.into()));
        assert!(e.contains("unknown node `ghost`"), "{e}");
    }

    #[test]
    fn a_route_returning_an_undeclared_target_is_an_error() {
        let g = Graph::<S>::new("t").node("a", noop).entry("a").route("a", &[END], |_| "a".into()).compile().unwrap();
        assert!(g.next_after("a", &S { n: 0 }).is_err());
    }
}

//! The planner's assists, beyond the rules every plan keeps: the names the
//! goal gives, listed in the plan prompt; worked examples as earlier turns;
//! and mends of the slips a rule names exactly. All behind one switch
//! (`[planner] assist`); each can also be left out alone (`switches`).

pub mod examples;
pub mod mend;
pub mod switches;

package sink

// StagePrefix begins the names of the staging tables of --atomic imports.
const StagePrefix = "_idemport_stage_"

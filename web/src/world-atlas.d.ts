// world-atlas ships its topologies as plain JSON; typed here instead of turning on
// resolveJsonModule, which would make tsc infer a literal type for every arc.
declare module 'world-atlas/countries-110m.json' {
  import type { Topology, GeometryCollection } from 'topojson-specification';
  const topology: Topology<{ countries: GeometryCollection<{ name: string }>; land: GeometryCollection }>;
  export default topology;
}

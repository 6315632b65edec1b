/* PoCL's devices for a small engine, without torchtrt_c (issue 13 item 4): 10 small kernels
 * (row softmax and row cumsum alternating on a 4x64 float tensor, one work-item per row),
 * input and output over host memory made per call (CL_MEM_USE_HOST_PTR) as an engine call
 * does, issued on
 *
 *   pthread          PoCL's pthread device (its worker threads run the commands)
 *   pthread held     the same, the first launch waiting for a user event completed before
 *                    clFinish (what engines did on CPU devices until session 8)
 *   sub1, sub1 held  a sub-device of one compute unit (clCreateSubDevices BY_COUNTS {1})
 *   basic            PoCL's basic device: each command runs inside the enqueue call, on the
 *                    calling thread (the caller-thread companion, backend/README.md)
 *
 * timed round robin (one call of each per round). The basic device exists only when
 * POCL_DEVICES names it; held launches on it deadlock in PoCL 3.1 (completing the user event
 * runs the commands under the event's lock), so there is no "basic held".
 *
 *   cc -O2 bench/cl_caller_thread.c -o /tmp/cl_caller_thread -lOpenCL
 *   POCL_DEVICES="pthread basic" /tmp/cl_caller_thread 2000
 *
 * PoCL 3.1, 2 cores shared with other jobs (load 3.6), 2000 rounds, medians (p10): pthread
 * 60.6 (29.5) us, pthread held 44.4 (36.8), sub1 56.0 (31.4), sub1 held 54.0 (31.0), basic
 * 15.8 (15.7). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static const char *src =
"__kernel void sm(__global const float *a, __global float *b, int n) {\n"
" int r = get_global_id(0); float m=-1e30f; for(int i=0;i<n;i++) m=fmax(m,a[r*n+i]);\n"
" float s=0; for(int i=0;i<n;i++) s+=exp(a[r*n+i]-m); for(int i=0;i<n;i++) b[r*n+i]=exp(a[r*n+i]-m)/s; }\n"
"__kernel void cs(__global const float *a, __global float *b, int n) {\n"
" int r = get_global_id(0); float s=0; for(int i=0;i<n;i++){ s+=a[r*n+i]; b[r*n+i]=s;} }\n";
#define CK(x) do{cl_int e_=(x); if(e_){printf("err %d line %d\n",e_,__LINE__);exit(1);}}while(0)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
enum{NK=10,R=4,C=64};
static float hin[R*C], hout[R*C];
typedef struct {cl_command_queue q; cl_kernel k[NK]; cl_mem tmp[2]; int held; const char*name;} mode;
static cl_context ctx;
static void run(mode*m){
  cl_int e; cl_mem in=clCreateBuffer(ctx,CL_MEM_USE_HOST_PTR|CL_MEM_READ_ONLY,sizeof hin,hin,&e);
  cl_mem out=clCreateBuffer(ctx,CL_MEM_USE_HOST_PTR,sizeof hout,hout,&e);
  cl_event ue=NULL; if(m->held) ue=clCreateUserEvent(ctx,&e);
  int n=C;
  for(int i=0;i<NK;i++){
    cl_mem a = i==0?in:m->tmp[(i+1)&1]; cl_mem b= i==NK-1?out:m->tmp[i&1];
    clSetKernelArg(m->k[i],0,sizeof a,&a);clSetKernelArg(m->k[i],1,sizeof b,&b);clSetKernelArg(m->k[i],2,sizeof n,&n);
    size_t g=R; CK(clEnqueueNDRangeKernel(m->q,m->k[i],1,NULL,&g,NULL,(i==0&&ue)?1:0,(i==0&&ue)?&ue:NULL,NULL));
  }
  if(ue){clSetUserEventStatus(ue,CL_COMPLETE);clReleaseEvent(ue);}
  CK(clFinish(m->q)); clReleaseMemObject(in);clReleaseMemObject(out);
}
int main(int argc,char**argv){
  int rounds=argc>1?atoi(argv[1]):2000;
  cl_platform_id p; CK(clGetPlatformIDs(1,&p,NULL));
  cl_device_id devs[4]; cl_uint nd; CK(clGetDeviceIDs(p,CL_DEVICE_TYPE_ALL,4,devs,&nd));
  cl_device_id pth=0,bas=0; char nm[256];
  for(cl_uint i=0;i<nd;i++){clGetDeviceInfo(devs[i],CL_DEVICE_NAME,256,nm,NULL); if(!strncmp(nm,"pthread",7))pth=devs[i]; if(!strncmp(nm,"basic",5))bas=devs[i];}
  cl_device_id sub; cl_uint ns; cl_device_partition_property pp[]={CL_DEVICE_PARTITION_BY_COUNTS,1,CL_DEVICE_PARTITION_BY_COUNTS_LIST_END,0};
  CK(clCreateSubDevices(pth,pp,1,&sub,&ns));
  cl_device_id all[3]={pth,sub,bas}; int na=bas?3:2; cl_int e;
  ctx=clCreateContext(NULL,na,all,NULL,NULL,&e); CK(e);
  cl_program pr=clCreateProgramWithSource(ctx,1,&src,NULL,&e);CK(e); CK(clBuildProgram(pr,na,all,"",NULL,NULL));
  mode ms[5]; int nm_=0; const char*names[]={"pthread","pthread held","sub1","sub1 held","basic"};
  for(int d=0;d<na;d++)for(int h=0;h<(d==2?1:2);h++){mode*m=&ms[nm_]; m->name=names[nm_]; nm_++; m->held=h;
    m->q=clCreateCommandQueueWithProperties(ctx,all[d],NULL,&e);CK(e);
    for(int i=0;i<NK;i++){m->k[i]=clCreateKernel(pr,i%2?"cs":"sm",&e);CK(e);}
    for(int i=0;i<2;i++){m->tmp[i]=clCreateBuffer(ctx,0,sizeof hin,NULL,&e);CK(e);}}
  for(int i=0;i<R*C;i++)hin[i]=(i%7)*0.1f;
  double *t=malloc(sizeof(double)*rounds*nm_);
  if(!bas) printf("no basic device: run with POCL_DEVICES=\"pthread basic\"\n");
  int mask=argc>2?strtol(argv[2],0,0):0x1f;
  for(int w=0;w<50;w++)for(int j=0;j<nm_;j++)if(mask>>j&1)run(&ms[j]);
  for(int r=0;r<rounds;r++)for(int j=0;j<nm_;j++)if(mask>>j&1){double t0=now();run(&ms[j]);t[j*rounds+r]=now()-t0;}
  for(int j=0;j<nm_;j++)if(mask>>j&1){qsort(t+j*rounds,rounds,sizeof(double),cmp);printf("%-14s median %7.1f p10 %7.1f p90 %7.1f\n",ms[j].name,t[j*rounds+rounds/2],t[j*rounds+rounds/10],t[j*rounds+rounds*9/10]);}
  return 0;}
